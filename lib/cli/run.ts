/**
 * `turnguard run`: the command-line shell around lib/run/run.ts. Journals the turn and, with
 * `--retries`, runs the command again after a retryable failure that wrote nothing.
 */
import { resolve } from "node:path";
import { failureLine } from "../core/build_outcome.ts";
import { openOutcomeFile } from "./outcome_file.ts";
import { UsageError } from "../errors.ts";
import { loadRegistry, profileClassifier, selectProfile } from "../config/registry.ts";
import { type RunResult, runTurn } from "../run/run.ts";
import { openTelemetry } from "../telemetry/export.ts";
import { formatDuration } from "../text/text.ts";
import { envRecord, type OptionSpec, parseOptions, parseSeconds, splitCommand } from "./args.ts";
import { JOURNAL_OPTIONS, turnJournaling } from "./journal_flags.ts";
import { stderrSink, stdoutSink, warnLine } from "../io/output.ts";

/** The flags `turnguard run` accepts. */
export const RUN_OPTIONS = {
  agent: { type: "string" },
  config: { type: "string" },
  "outcome-json": { type: "boolean" },
  "outcome-file": { type: "string" },
  timeout: { type: "string" },
  "keep-daemons": { type: "boolean" },
  "fail-fast": { type: "boolean" },
  verbose: { type: "boolean", short: "v" },
  ...JOURNAL_OPTIONS,
} satisfies OptionSpec;

/** A run's session id in the journal: each `turnguard run` is a session of one turn. */
export function runSessionId(pid: number, now: number): string {
  return `run-${pid}-${now.toString(36)}`;
}

/** Runs `turnguard run ARGS` and returns the exit code. */
export async function runCommand(argv: string[]): Promise<number> {
  const { own, command } = splitCommand(argv, RUN_OPTIONS);
  const { values } = parseOptions("run", own, RUN_OPTIONS);
  if (command.length === 0) {
    throw new UsageError(
      "run: missing the agent command (turnguard run [OPTIONS] -- CMD [ARGS...])",
    );
  }
  const timeout = parseSeconds("--timeout", values.timeout);
  if (timeout === 0) throw new UsageError(`--timeout: must be more than 0 seconds`);
  const env = envRecord();
  const cwd = process.cwd();
  const registry = await loadRegistry({ configFlag: values.config, env, cwd });
  const profile = selectProfile(registry, values.agent, command[0]);
  const warn = warnLine;
  const outcomeFile = values["outcome-file"]
    ? openOutcomeFile(resolve(cwd, values["outcome-file"]), warn)
    : null;
  const { recorder, waits } = turnJournaling(
    values,
    env,
    cwd,
    profile.name,
    warn,
    registry.journal,
  );
  const telemetry = openTelemetry({ table: registry.telemetry, env, name: recorder.name, warn });
  recorder.exportTo(telemetry);
  const key = { session: runSessionId(process.pid, Date.now()), turn: 1 };
  const unlisten = recorder.policy.retries > 0 ? waits.listen() : () => {};
  recorder.started(key, { mode: "run", agent: profile.name, promptId: null });
  const classifier = profileClassifier(registry, profile);
  let attempt = 0;
  let result: RunResult;
  try {
    for (;;) {
      result = await runTurn({
        command: command[0],
        args: command.slice(1),
        profile,
        classifier,
        env,
        captureStdout: values["outcome-json"] === true,
        timeoutMs: timeout !== undefined ? timeout * 1000 : null,
        keepDaemons: values["keep-daemons"] === true || registry.keepDaemons,
        failFast: values["fail-fast"] === true || (profile.failFast ?? registry.failFast),
        onAttempt: (a) => recorder.agentAttempt(key, a),
        // The agent's own output, passed through unchanged.
        stdout: stdoutSink.passThrough,
        stderr: stderrSink.passThrough,
      });
      reportAttempt(result, values.verbose === true, warn);
      // Any stdout byte is a side effect: an attempt that wrote something is never repeated.
      const decision = recorder.ended(key, attempt, result.outcome, result.outcome.reply.chars > 0);
      if (decision.kind !== "retry") break;
      warn(
        `turnguard: retry ${decision.attempt} of ${decision.of} waits out ${decision.reason}; ` +
          `it runs in ${formatDuration(decision.afterMs)} ` +
          `(turnguard retry ${recorder.name} runs it now)`,
      );
      const end = await waits.waitInForeground(key.session, decision.afterMs);
      if (end === "stopped") {
        const reason = `retry ${decision.attempt} of ${decision.of} was stopped before it ran`;
        recorder.stopped(key, attempt, reason);
        warn(`turnguard: ${reason}`);
        break;
      }
      attempt = decision.attempt;
      recorder.retryStarted(key, attempt);
    }
  } finally {
    unlisten();
  }
  const problem = outcomeFile?.append(result.outcome) ?? null;
  outcomeFile?.close();
  if (problem) warn(`turnguard: ${problem}`);
  if (values["outcome-json"]) void stdoutSink.json(result.outcome);
  await telemetry?.close();
  return result.exitCode;
}

/** The diagnostics (with --verbose) and the failure line of one attempt, on stderr. */
function reportAttempt(result: RunResult, verbose: boolean, warn: (line: string) => void): void {
  const { outcome } = result;
  if (verbose) { for (const d of outcome.diagnostics) warn(`turnguard: ${d}`); }
  const unseen = result.swallowed || (result.stderrWasEmpty && !result.readerGone);
  if (outcome.status === "failed" && outcome.error && unseen) {
    warn(failureLine(outcome.agent, outcome.error, outcome.retry));
  }
}
