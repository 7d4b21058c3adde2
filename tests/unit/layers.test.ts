/**
 * The layer rule of docs/ARCHITECTURE.md, checked on the code: every import in lib/,
 * plugins/ and main.ts points to its own folder or to a folder on a lower layer, and no
 * files import each other in a loop. A folder not in LAYERS fails, so a new one must be
 * placed.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const ROOT = join(import.meta.dirname ?? ".", "..", "..");

/**
 * Layers from the ground up: a unit (a folder of lib/, a root file of lib/, `plugins`, or
 * `main.ts`) may import only its own files and units of lower layers.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["lib/text", "lib/errors.ts", "lib/version.ts", "lib/once.ts", "lib/types"],
  ["lib/io"],
  ["lib/acp"],
  ["lib/core"],
  ["lib/plugin"],
  ["lib/cause"],
  ["lib/publish", "lib/telemetry", "lib/record"],
  ["lib/plugin_api.ts"],
  ["plugins"],
  ["lib/config"],
  ["lib/agent", "lib/journal"],
  ["lib/retry"],
  ["lib/run"],
  ["lib/proxy"],
  ["lib/cli"],
  ["main.ts"],
];

const SPEC =
  /(?:\bfrom\s*|\bimport\s*\(?\s*|\bnew URL\(\s*)(["'])(\.{1,2}\/[^"']+)\1|^\s*import\s+(["'])(\.{1,2}\/[^"']+)\3/gm;

/** The relative imports of one source text (static, type-only, re-exports, import()). */
export function importsOf(source: string): string[] {
  const specs: string[] = [];
  for (const m of source.matchAll(SPEC)) specs.push(m[2] ?? m[4]);
  return specs;
}

/** The unit a repo-relative path belongs to, or null outside lib/, plugins/ and main.ts. */
export function unitOf(path: string): string | null {
  if (path === "main.ts") return "main.ts";
  const parts = path.split("/");
  if (parts[0] === "plugins") return "plugins";
  if (parts[0] !== "lib") return null;
  return parts.length === 2 ? path : `lib/${parts[1]}`;
}

function layerOf(unit: string): number {
  return LAYERS.findIndex((layer) => layer.includes(unit));
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (/\.(ts|js)$/.test(name)) out.push(path);
  }
  return out;
}

/** The one module of lib/ the built-in packs may import: the public plugin API. */
export const PLUGIN_API = "lib/plugin_api.ts";

/**
 * The imports of plugins/ that are private doors: anything but the public plugin API and
 * the packs' own files (docs/ARCHITECTURE.md: the packs use the API a user gets).
 */
export function privateDoors(graph: Map<string, string[]>): string[] {
  const bad: string[] = [];
  for (const [file, targets] of graph) {
    if (unitOf(file) !== "plugins") continue;
    for (const target of targets) {
      if (target !== PLUGIN_API && unitOf(target) !== "plugins") bad.push(`${file} -> ${target}`);
    }
  }
  return bad;
}

/** Every import edge between source files, repo-relative. */
function edges(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of ["main.ts", ...sources("lib"), ...sources("plugins")]) {
    const text = readFileSync(join(ROOT, file), "utf8");
    graph.set(
      file,
      importsOf(text).map((spec) => relative(ROOT, normalize(join(ROOT, dirname(file), spec)))),
    );
  }
  return graph;
}

/** The import loops of a graph, each as the files on it (Tarjan's components over 1). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

describe("layers", () => {
  const graph = edges();

  test("every unit of lib/ is on a layer", () => {
    const units = new Set([...graph.keys()].map((f) => unitOf(f)!));
    expect([...units].filter((u) => layerOf(u) < 0)).toEqual([]);
  });

  test("no import points to a higher layer or sideways to another unit of its layer", () => {
    const bad: string[] = [];
    for (const [file, targets] of graph) {
      const from = unitOf(file)!;
      for (const target of targets) {
        const to = unitOf(target);
        if (to === null || to === from) continue;
        if (layerOf(to) >= layerOf(from)) bad.push(`${file} -> ${target}`);
      }
    }
    expect(bad).toEqual([]);
  });

  test("plugins/ imports only the public plugin API (no private door)", () => {
    expect(privateDoors(graph)).toEqual([]);
  });

  test("no import cycles", () => {
    expect(cycles(graph)).toEqual([]);
  });

  test("the checks can fail: an upward import and a loop are seen", () => {
    expect(importsOf(`import type { A } from "../proxy/proxy.ts";\nexport * from './b.ts';`))
      .toEqual(["../proxy/proxy.ts", "./b.ts"]);
    expect(importsOf(`const m = await import("./late.ts");`)).toEqual(["./late.ts"]);
    expect(layerOf(unitOf("lib/core/decide.ts")!)).toBeLessThan(layerOf("lib/proxy"));
    const loop = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]);
    expect(cycles(loop)).toEqual([["a", "b", "c"]]);
    const doors = new Map([
      ["plugins/a.ts", ["lib/plugin_api.ts", "plugins/b.ts", "lib/cause/anchors.ts"]],
      ["lib/cause/x.ts", ["lib/core/decide.ts"]],
    ]);
    expect(privateDoors(doors)).toEqual(["plugins/a.ts -> lib/cause/anchors.ts"]);
  });
});
