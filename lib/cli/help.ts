/** The help text and version, kept in one place for `--help` and the README. */
import { VERSION } from "../version.ts";

/** The commit a release build embeds (`bun build --define`); undeclared when run from source. */
declare const TURNGUARD_BUILD_COMMIT: string | undefined;

/**
 * What `--version` prints: the version and the commit it was built from; from a source
 * checkout, `source` and the checkout's commit when git can tell.
 */
export function versionLine(): string {
  if (typeof TURNGUARD_BUILD_COMMIT === "string") {
    return `turnguard ${VERSION} (${TURNGUARD_BUILD_COMMIT})`;
  }
  let commit = "";
  try {
    // Loaded here: only `--version` from a source checkout needs them.
    const { execFileSync } = process.getBuiltinModule("node:child_process");
    const { dirname } = process.getBuiltinModule("node:path");
    const { fileURLToPath } = process.getBuiltinModule("node:url");
    commit = execFileSync("git", ["rev-parse", "--short=12", "HEAD"], {
      cwd: dirname(fileURLToPath(import.meta.url)),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 2000,
    }).trim();
  } catch {
    // not a checkout, or no git: the version alone
  }
  return `turnguard ${VERSION} (source${commit ? ` ${commit}` : ""})`;
}

/** `turnguard --help`. */
export const HELP = `turnguard ${VERSION} — every agent turn gets its true outcome

Usage:
  turnguard run      [OPTIONS] -- CMD [ARGS...]       print-mode wrapper
  turnguard proxy    [OPTIONS] -- AGENT_CMD [ARGS...] transparent ACP stdio proxy
  turnguard wait     [NAME|SESSION] [--print|--json] [--timeout S]
  turnguard log      [NAME|SESSION] [--limit N] [--json]
  turnguard retry    NAME|SESSION
  turnguard scan     [--agent NAME] [--kind K] [--json] FILE...|-
  turnguard explain  [--agent NAME] [--kind K] [--json] TEXT|- [TEXT...]
  turnguard check    [--config PATH] [--json] [--verbose]
  turnguard replay   [--config PATH] [--agent NAME] [--json] [--verbose] [--fail-fast] FILE
  turnguard schema   the Outcome's JSON Schema
  turnguard types    the plugin API's TypeScript declarations
  turnguard completions bash|zsh|fish
  turnguard --version | -V      turnguard --help | -h

\`turnguard COMMAND --help\` (or \`turnguard help COMMAND\`) lists a command's flags, defaults,
exit codes and examples.

Exit codes of run and proxy follow env, timeout and nice: the agent's own status when it
failed by itself (128+N for signal N); 125 for turnguard's own usage or config errors;
126 when the command cannot be executed; 127 when it is not found. run also exits 1 when
turnguard surfaced a failure the agent swallowed and 124 when --timeout expired; proxy
answers a failed turn with a JSON-RPC error instead.
Other commands: 0 success, 1 a negative answer, 2 usage or config errors, more for wait,
log and retry (see their --help).
`;
