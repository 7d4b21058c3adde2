/**
 * How turnguard starts itself again (`turnguard replay` runs a real `turnguard proxy` whose
 * agent is turnguard playing a recording): the compiled binary alone; from source, the
 * runtime and the entry point (`bun --no-env-file main.ts`, `deno run -A main.ts`, `node
 * turnguard.mjs`).
 */
import { basename } from "node:path";

/** The argv that runs this turnguard (without a subcommand). */
export function selfArgv(
  execPath: string = process.execPath,
  argv: readonly string[] = process.argv,
): string[] {
  const runtime = basename(execPath).replace(/\.exe$/, "");
  const entry = argv[1];
  if (entry === undefined || entry.startsWith("/$bunfs/") || entry.startsWith("B:/~BUN/")) {
    return [execPath];
  }
  if (runtime === "bun") return [execPath, "--no-env-file", entry];
  if (runtime === "deno") return [execPath, "run", "-A", entry];
  if (runtime === "node") return [execPath, entry];
  return [execPath];
}
