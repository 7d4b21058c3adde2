/** The compiled binary for tests that must exercise it: built with `make build` when stale. */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./cli.ts";

/** Where `make build` writes the compiled binary. */
export const BINARY = join(ROOT, "dist", "turnguard");

/**
 * Returns the path of dist/turnguard, running `make build` first (make rebuilds it only when
 * a source is newer). Throws with make's output when the build fails.
 */
export function ensureBinary(): string {
  const r = spawnSync("make", ["build"], { cwd: ROOT, encoding: "utf8" });
  if (r.status !== 0 || !existsSync(BINARY)) {
    throw new Error(`make build failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  return BINARY;
}
