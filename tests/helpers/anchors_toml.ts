/** Where the embedded anchors.toml declares things, so tests need not hard-code its lines. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./cli.ts";

/** The line of the `[[anchor]]` header of anchor `id` in anchors.toml (1-based). */
export function anchorLine(id: string): number {
  const lines = readFileSync(join(ROOT, "anchors.toml"), "utf8").split("\n");
  const at = lines.findIndex((l) => l.trim() === `id = "${id}"`);
  if (at < 0) throw new Error(`anchors.toml declares no anchor ${id}`);
  for (let i = at; i >= 0; i--) if (lines[i].trim() === "[[anchor]]") return i + 1;
  throw new Error(`anchor ${id} of anchors.toml has no [[anchor]] header`);
}
