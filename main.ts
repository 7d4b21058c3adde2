/**
 * turnguard: wraps an AI coding agent and gives every turn its true, normalized outcome.
 * Entry point: dispatches the subcommand and turns turnguard's own errors into one line
 * on stderr and a distinct exit code.
 */
import { EXIT, TurnguardError } from "./lib/errors.ts";
import { HELP, VERSION } from "./lib/cli/help.ts";
import { stdioIdle, stdout } from "./lib/stdio.ts";
import { dirVarProblems } from "./lib/env_dirs.ts";
import { warnLine } from "./lib/output.ts";

type Command = (argv: string[]) => number | Promise<number>;

/**
 * The subcommands, each loaded only when it runs: `turnguard run` in a shell loop should
 * not pay for the proxy, the journal readers or the author tools at every start.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  run: async () => (await import("./lib/cli/run.ts")).runCommand,
  proxy: async () => (await import("./lib/cli/proxy.ts")).proxyCommand,
  schema: async () => (await import("./lib/cli/schema.ts")).schemaCommand,
  wait: async () => (await import("./lib/cli/wait.ts")).waitCommand,
  log: async () => (await import("./lib/cli/log.ts")).logCommand,
  retry: async () => (await import("./lib/cli/retry.ts")).retryCommand,
  scan: async () => (await import("./lib/cli/scan.ts")).scanCommand,
  check: async () => (await import("./lib/cli/check.ts")).checkCommand,
  explain: async () => (await import("./lib/cli/explain.ts")).explainCommand,
};

/** Runs turnguard with `argv` (without the program name) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    void stdout.write(HELP);
    return name === undefined ? EXIT.usage : 0;
  }
  if (name === "--version" || name === "version") {
    void stdout.write(`turnguard ${VERSION}\n`);
    return 0;
  }
  for (const problem of dirVarProblems(process.env)) warnLine(`turnguard: ${problem}`);
  const command = COMMANDS[name];
  try {
    if (!command) {
      throw new TurnguardError(`unknown command "${name}" (see turnguard --help)`, EXIT.usage);
    }
    return await (await command())(rest);
  } catch (err) {
    if (err instanceof TurnguardError) {
      warnLine(`turnguard: ${err.message}`);
      return err.exitCode;
    }
    throw err;
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Let pending output drain, then leave even if a stray handle is open.
  await stdioIdle();
  process.exit(code);
}
