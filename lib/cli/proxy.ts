/**
 * `turnguard proxy`: the command-line shell around lib/proxy/proxy.ts. Journals the turns when
 * asked to and, with `--retries`, retries a retryable failure nothing reached the client of.
 */
import { basename, resolve } from "node:path";
import { DEFAULT_INSPECT_LIMIT } from "../acp/lines.ts";
import { UsageError } from "../errors.ts";
import type { Outcome } from "../core/outcome.ts";
import { openOutcomeFile } from "./outcome_file.ts";
import { DEFAULT_GRACE_MS, runProxy } from "../proxy/proxy.ts";
import { runChainProxy } from "../proxy/chain.ts";
import { MAX_TIMER_MS } from "../io/timer_delay.ts";
import { proxyPublishContext, PUBLISH_OPTIONS } from "./publish_flags.ts";
import {
  loadRegistry,
  profileClassifier,
  profileReaders,
  selectProfile,
} from "../config/registry.ts";
import { openTelemetry } from "../telemetry/export.ts";
import { envRecord, type OptionSpec, parseOptions, parseSeconds, splitCommand } from "./args.ts";
import { JOURNAL_OPTIONS, turnJournaling } from "./journal_flags.ts";
import { stdinIsTerminal } from "../io/terminal.ts";
import { bun } from "../io/bun_api.ts";
import { bunStdin, byteSource, stdSink, tappedSource } from "../proxy/agent_io.ts";
import { Recorder } from "../record/recorder.ts";
import { NotRegularFileError } from "../io/private_file.ts";
import { errCode } from "../io/logfs.ts";
import { stderrSink, stdoutSink, warnLine } from "../io/output.ts";

/** The flags `turnguard proxy` accepts. */
export const PROXY_OPTIONS = {
  agent: { type: "string" },
  profile: { type: "string" },
  chain: { type: "boolean" },
  config: { type: "string" },
  "outcome-file": { type: "string" },
  record: { type: "string" },
  "turn-timeout": { type: "string" },
  "rewrite-errors": { type: "boolean" },
  "strict-turns": { type: "boolean" },
  "fail-fast": { type: "boolean" },
  "recover-replies": { type: "boolean" },
  "max-line-bytes": { type: "string" },
  grace: { type: "string" },
  "keep-daemons": { type: "boolean" },
  verbose: { type: "boolean", short: "v" },
  ...PUBLISH_OPTIONS,
  ...JOURNAL_OPTIONS,
} satisfies OptionSpec;

/** The generic profile of a chain link given no `--profile` (it reads no logs). */
const CHAIN_PROFILE = "chain";

/**
 * `select()`, its usage error naming `flag` when `flag` gave the profile's name (the registry
 * names `--agent`, its synonym).
 */
function namedBy<T>(flag: string, name: string | undefined, select: () => T): T {
  try {
    return select();
  } catch (err) {
    if (name === undefined || !(err instanceof UsageError)) throw err;
    throw new UsageError(err.message.replace(`--agent ${name}:`, `${flag} ${name}:`));
  }
}

/** Parses `--max-line-bytes`: a whole number of bytes, at least 1. */
export function parseByteCount(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new UsageError(`${flag}: expected a whole number of bytes (at least 1), got "${value}"`);
  }
  return n;
}

/** Runs `turnguard proxy ARGS` and returns the exit code. */
export async function proxyCommand(argv: string[]): Promise<number> {
  const { own, command } = splitCommand(argv, PROXY_OPTIONS);
  const { values } = parseOptions("proxy", own, PROXY_OPTIONS);
  const chain = values.chain === true;
  if (chain && command.length > 0) {
    throw new UsageError(
      "--chain: the successor is the conductor's; give no agent command (turnguard proxy --chain [OPTIONS])",
    );
  }
  if (!chain && command.length === 0) {
    throw new UsageError(
      "proxy: missing the agent command (turnguard proxy [OPTIONS] -- AGENT_CMD [ARGS...])",
    );
  }
  if (
    values.agent !== undefined && values.profile !== undefined && values.agent !== values.profile
  ) {
    throw new UsageError(
      `--profile ${values.profile}: --agent names another profile (${values.agent})`,
    );
  }
  if (chain && values.record !== undefined) {
    throw new UsageError("--record: a chain link has no agent of its own to record");
  }
  const profileName = values.profile ?? values.agent;
  const timeout = parseSeconds("--turn-timeout", values["turn-timeout"]);
  if (timeout === 0) throw new UsageError(`--turn-timeout: must be more than 0 seconds`);
  const grace = parseSeconds("--grace", values.grace);
  if (grace !== undefined && grace * 1000 > MAX_TIMER_MS) {
    throw new UsageError(
      `--grace: at most ${
        Math.floor(MAX_TIMER_MS / 1000)
      } seconds (about 24 days), got "${values.grace}"`,
    );
  }
  const limit = parseByteCount("--max-line-bytes", values["max-line-bytes"]);
  const env = envRecord();
  const cwd = process.cwd();
  const registry = await loadRegistry({ configFlag: values.config, env, cwd });
  // In a chain without a profile, none is read: a generic one named for the mode.
  const profile = namedBy(
    "--profile",
    values.profile,
    () => selectProfile(registry, profileName, command[0] ?? CHAIN_PROFILE),
  );
  const warn = warnLine;
  const publish = proxyPublishContext({
    values,
    profile,
    detectors: registry.detectors,
    env,
    cwd,
    warn,
  });
  // Like `run`, every proxy journals its turns (`--journal`, `$TURNGUARD_JOURNAL`, else the
  // XDG state directory), so `turnguard wait` finds any session without extra flags.
  const journaling = turnJournaling(values, env, cwd, profile.name, warn, registry.journal);
  const name = journaling.recorder.name;
  const telemetry = openTelemetry({ table: registry.telemetry, env, name, warn });
  journaling.recorder.exportTo(telemetry);
  const outcomes = values["outcome-file"]
    ? openOutcomeFile(resolve(cwd, values["outcome-file"]), warn)
    : null;
  // A failed append is said on stderr, once per distinct problem (the turns go on).
  const problems = new Set<string>();
  const appendOutcome = outcomes
    ? (outcome: Outcome) => {
      const problem = outcomes.append(outcome);
      if (problem && !problems.has(problem)) {
        problems.add(problem);
        warn(`turnguard: ${problem}`);
      }
    }
    : undefined;
  const recorder = values.record !== undefined
    ? openRecording(resolve(cwd, values.record), {
      agent: basename(command[0]),
      command: command[0],
      profile: profile.name,
      sources: profile,
      env,
      cwd,
      warn,
    })
    : null;
  const input = bun ? bunStdin() : byteSource(process.stdin);
  const onOutcome = recorder
    ? (outcome: Outcome) => {
      appendOutcome?.(outcome);
      recorder.outcome(outcome.session);
    }
    : appendOutcome;
  let exit: { code: number } | null = null;
  try {
    const result = await (chain ? runChainProxy : runProxy)({
      command: command[0] ?? CHAIN_PROFILE,
      args: command.slice(1),
      profile,
      classifier: profileClassifier(registry, profile),
      env,
      // Under Bun, the client's side is read and written Bun-native (lib/proxy/agent_io.ts).
      input: recorder
        ? tappedSource(input, (c) => recorder.fromClient(c), () => recorder.clientClosed())
        : input,
      // The client's wire: the agent's bytes, and turnguard's answers, as the protocol has them.
      output: bun ? stdSink(stdoutSink.passThrough) : stdoutSink.passThrough.writable(),
      // A person at a terminal is not an ACP client: an agent that cannot start is not
      // answered on their behalf (no wait for a first request).
      firstRequestWaitMs: stdinIsTerminal() ? 0 : undefined,
      // The agent's stderr passes through; turnguard's own lines go through lineSink.
      stderr: stderrSink.passThrough.writable(),
      inspectLimit: limit ?? DEFAULT_INSPECT_LIMIT,
      turnTimeoutMs: timeout !== undefined ? timeout * 1000 : null,
      graceMs: grace !== undefined ? grace * 1000 : DEFAULT_GRACE_MS,
      keepDaemons: values["keep-daemons"] === true || registry.keepDaemons,
      rewriteErrors: values["rewrite-errors"] === true,
      strictTurns: values["strict-turns"] === true,
      failFast: values["fail-fast"] === true || (profile.failFast ?? registry.failFast),
      recoverReplies: values["recover-replies"] === true,
      readers: profileReaders(registry.readers, profile),
      verbose: values.verbose === true,
      // Each turn's end: publish, then the journal (its retries, and telemetry) and the
      // outcome file (lib/proxy/turn_end.ts).
      turnEnd: { publish, recorder: journaling.recorder, onOutcome, onRevised: appendOutcome },
      // The journal reads every turn's reply (`wait --print`), so the text is always kept.
      keepReplyText: true,
      retryWaits: journaling.recorder.policy.retries > 0 ? journaling.waits : undefined,
      wireTap: recorder ?? undefined,
    });
    if (result.spawnError) warn(`turnguard: proxy: ${result.spawnError}`);
    exit = { code: result.exitCode };
    return result.exitCode;
  } finally {
    await recorder?.close(exit);
    outcomes?.close();
    await telemetry?.close();
  }
}

/**
 * Opens `--record FILE` before the agent starts, so a bad path is a usage error while
 * nothing has run yet.
 */
function openRecording(
  path: string,
  opts: Omit<ConstructorParameters<typeof Recorder>[0], "path">,
): Recorder {
  try {
    return new Recorder({ path, ...opts });
  } catch (err) {
    if (err instanceof NotRegularFileError) throw new UsageError(`--record ${err.message}`);
    throw new UsageError(`--record ${path}: cannot create the recording (${errCode(err)})`);
  }
}
