/**
 * Finds the line of a key path in TOML source, so config errors can say where they are.
 * Tolerant, not a parser: it follows `[table]` and `[[array]]` headers and `key =` lines.
 */

/** One step of a key path: a table key or an array index. */
export type KeyStep = string | number;

/** Renders a key path for messages: `anchor[2].regex`, `agent.agy.logs`. */
export function formatKeyPath(path: readonly KeyStep[]): string {
  return path.map((step, i) => typeof step === "number" ? `[${step}]` : i === 0 ? step : `.${step}`)
    .join("");
}

function splitKey(raw: string): string[] {
  return raw.split(".").map((p) => p.trim().replace(/^["']|["']$/g, ""));
}

/**
 * The 1-based line where `path` is defined in `source`, or the nearest enclosing table's
 * line, or null when nothing in the file names it.
 */
export function locateKey(source: string, path: readonly KeyStep[]): number | null {
  const lines = source.split(/\r?\n/);
  const counters = new Map<string, number>();
  let table: KeyStep[] = [];
  let best: { line: number; depth: number } | null = null;
  const consider = (candidate: KeyStep[], line: number) => {
    let depth = 0;
    while (
      depth < candidate.length && depth < path.length &&
      String(candidate[depth]) === String(path[depth])
    ) depth++;
    if (depth !== candidate.length) return;
    if (!best || depth > best.depth) best = { line, depth };
  };
  lines.forEach((text, i) => {
    const line = text.trim();
    const arr = line.match(/^\[\[\s*([^\]]+?)\s*\]\]/);
    const tbl = arr ? null : line.match(/^\[\s*([^\]]+?)\s*\]/);
    if (arr) {
      const name = splitKey(arr[1]);
      const key = name.join(".");
      const index = counters.get(key) ?? 0;
      counters.set(key, index + 1);
      table = [...name, index];
      consider(table, i + 1);
    } else if (tbl) {
      table = splitKey(tbl[1]);
      consider(table, i + 1);
    } else {
      const kv = line.match(/^([A-Za-z0-9_.\-"' ]+?)\s*=/);
      if (kv) consider([...table, ...splitKey(kv[1])], i + 1);
    }
  });
  return (best as { line: number } | null)?.line ?? null;
}
