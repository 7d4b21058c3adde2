/**
 * turnguard: wraps an AI coding agent and gives every turn its true, normalized outcome.
 * Entry point: dispatches the subcommand and turns turnguard's own errors into one line
 * on stderr and a distinct exit code.
 */
import { EXIT, TurnguardError } from "./lib/errors.ts";
import { runCommand } from "./lib/cli/run.ts";
import { proxyCommand } from "./lib/cli/proxy.ts";
import { schemaCommand } from "./lib/cli/schema.ts";
import { waitCommand } from "./lib/cli/wait.ts";
import { logCommand } from "./lib/cli/log.ts";
import { retryCommand } from "./lib/cli/retry.ts";
import { scanCommand } from "./lib/cli/scan.ts";
import { checkCommand } from "./lib/cli/check.ts";
import { explainCommand } from "./lib/cli/explain.ts";
import { HELP, VERSION } from "./lib/cli/help.ts";

type Command = (argv: string[]) => number | Promise<number>;

const COMMANDS: Record<string, Command> = {
  run: runCommand,
  proxy: proxyCommand,
  schema: schemaCommand,
  wait: waitCommand,
  log: logCommand,
  retry: (argv) => retryCommand(argv),
  scan: scanCommand,
  check: checkCommand,
  explain: explainCommand,
};

/** Runs turnguard with `argv` (without the program name) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    process.stdout.write(HELP);
    return name === undefined ? EXIT.usage : 0;
  }
  if (name === "--version" || name === "version") {
    process.stdout.write(`turnguard ${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS[name];
  try {
    if (!command) {
      throw new TurnguardError(`unknown command "${name}" (see turnguard --help)`, EXIT.usage);
    }
    return await command(rest);
  } catch (err) {
    if (err instanceof TurnguardError) {
      process.stderr.write(`turnguard: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Let pending stdout writes drain, then leave even if a stray handle is open.
  process.stdout.write("", () => process.exit(code));
}
