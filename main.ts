/**
 * turnguard: wraps an AI coding agent and gives every turn its true, normalized outcome.
 * Entry point: dispatches the subcommand and turns turnguard's own errors into one line
 * on stderr and a distinct exit code.
 */
import { EXIT, TurnguardError } from "./lib/errors.ts";
import { closestName, HelpRequest } from "./lib/cli/args.ts";
import { HELP, versionLine } from "./lib/cli/help.ts";
import { stdioIdle } from "./lib/io/stdio.ts";
import { dirVarProblems } from "./lib/io/env_dirs.ts";
import { captureStrayOutput, stdoutSink, warnLine } from "./lib/io/output.ts";

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
  replay: async () => (await import("./lib/cli/replay.ts")).replayCommand,
  types: async () => (await import("./lib/cli/types.ts")).typesCommand,
  completions: async () => (await import("./lib/cli/completions.ts")).completionsCommand,
};

/**
 * The wrappers: their own usage and config errors exit 125, as env, timeout and nice do,
 * so that they are never taken for the agent's exit status.
 */
const WRAPPERS = new Set(["run", "proxy"]);

/** Runs turnguard with `argv` (without the program name) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  // `turnguard help CMD` is `turnguard CMD --help`.
  if (argv[0] === "help" && argv[1] !== undefined && argv[1] in COMMANDS) {
    argv = [argv[1], "--help"];
  }
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    void stdoutSink.text(HELP);
    return name === undefined ? EXIT.usage : 0;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    void stdoutSink.line(versionLine());
    return 0;
  }
  for (const problem of dirVarProblems(process.env)) warnLine(`turnguard: ${problem}`);
  if (WRAPPERS.has(name)) {
    // A wrapper finishes now on SIGINT/SIGTERM/SIGHUP/SIGQUIT in every state, from here on
    // (while its config loads too; as PID 1 an unhandled SIGTERM would be ignored), and as
    // PID 1 it reaps the orphans that are handed to it.
    const { installFinishSignals } = await import("./lib/agent/finish.ts");
    installFinishSignals();
    if (process.pid === 1) void (await import("./lib/agent/reaper.ts")).reapOrphans();
  }
  const command = COMMANDS[name];
  try {
    if (!command) {
      const near = closestName(name, Object.keys(COMMANDS));
      throw new TurnguardError(
        `unknown command "${name}"${near ? `; did you mean ${near}?` : ""} ` +
          `(see turnguard --help)`,
        EXIT.usage,
      );
    }
    return await (await command())(rest);
  } catch (err) {
    if (err instanceof HelpRequest) {
      const { COMMAND_HELP, formatCommandHelp } = await import("./lib/cli/command_help.ts");
      void stdoutSink.text(formatCommandHelp(err.subcommand, COMMAND_HELP[err.subcommand]));
      return 0;
    }
    if (err instanceof TurnguardError) {
      warnLine(`turnguard: ${err.message}`);
      return err.exitCode === EXIT.usage && WRAPPERS.has(name) ? EXIT.wrapperUsage : err.exitCode;
    }
    throw err;
  }
}

if (import.meta.main) {
  captureStrayOutput();
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Let pending output drain, then leave even if a stray handle is open.
  await stdioIdle();
  process.exit(code);
}
