/**
 * How one proxy is wired to the world: the client's streams, the agent to start, the
 * flags, and what each turn's end does besides answering the client.
 */
import type { Readable, Writable } from "node:stream";
import type { LoadedRecordReader } from "../plugin/api.ts";
import type { LogFs } from "../io/logfs.ts";
import type { RetryWaits } from "../retry/waits.ts";
import type { AgentLaunch } from "../agent/launch.ts";
import type { ByteSink, ByteSource } from "./agent_io.ts";
import type { WireTap } from "../record/recorder.ts";
import type { TurnEndSteps } from "./turn_end.ts";

/** Default grace periods: after EOF before SIGTERM (and again before SIGKILL), and after a
 * timeout's `session/cancel` before the client is answered. */
export const DEFAULT_GRACE_MS = 5000;

/**
 * How many requests of each side may wait for an answer at once: each is remembered (to be
 * answered if the agent dies), so the cap bounds that memory. A request past it is answered
 * by turnguard and not forwarded.
 */
export const DEFAULT_MAX_PENDING = 65_536;

/** How one proxy is wired to the world; tests pass their own streams and settings. */
export interface ProxyOptions extends AgentLaunch {
  /**
   * The client's side: its requests come in on `input`, the agent's bytes go to `output`
   * (Node streams, or the Bun-native ones of lib/proxy/agent_io.ts).
   */
  input: Readable | ByteSource;
  output: ByteSink;
  /** Where the agent's stderr (and turnguard's verbose lines) go. */
  stderr: Writable;
  /** Lines longer than this are passed through without being inspected. */
  inspectLimit?: number;
  /** `--turn-timeout`: a turn silent this long is cancelled and answered with an error. */
  turnTimeoutMs?: number | null;
  /** Grace periods (EOF → SIGTERM → SIGKILL; timeout cancel → answer). */
  graceMs?: number;
  /**
   * Whether each turn keeps its message text (64 KiB) for the Outcome's `reply.text`: only
   * when something reads it (journal, outcome file, publish fallback). Otherwise
   * characters are only counted, plus the head a failure notice fits in when the profile
   * has text anchors, and Outcomes carry no `reply.text`. Default true.
   */
  keepReplyText?: boolean;
  /**
   * `--fail-fast`: a turn whose agent retries a cause retrying cannot cure (live evidence,
   * lib/core/end_early.ts) is cancelled and answered with that cause at once.
   */
  failFast?: boolean;
  /** How often a running turn's logs and records are looked at (ms; default 1000). */
  followPollMs?: number;
  /** `--rewrite-errors`. */
  rewriteErrors?: boolean;
  /** `--strict-turns`: an incomplete answer ended as `end_turn` is answered as an error. */
  strictTurns?: boolean;
  /**
   * `--recover-replies`: a final answer the records hold that the client did not receive is
   * sent as the turn's last `agent_message_chunk` before the prompt's response.
   */
  recoverReplies?: boolean;
  /** The profile's session record readers (docs/EVIDENCE.md). */
  readers?: readonly LoadedRecordReader[];
  /**
   * What each turn's end does besides answering the client (lib/proxy/turn_end.ts): the
   * publish fallback, the journal and its retries, telemetry, the outcome file.
   */
  turnEnd?: TurnEndSteps;
  /** Where retries wait (SIGUSR1 runs them now while the proxy runs). */
  retryWaits?: RetryWaits;
  /** `--verbose`: turnguard's diagnostics, one line each. */
  verbose?: boolean;
  now?: () => number;
  fs?: LogFs;
  /** When the agent cannot start: how long to wait for the client's first request. */
  firstRequestWaitMs?: number;
  /** Forward SIGINT/SIGTERM/SIGHUP/SIGQUIT to the agent (off in in-process tests). */
  forwardSignals?: boolean;
  /** Requests of each side waiting at once (default DEFAULT_MAX_PENDING). */
  maxPending?: number;
  /** `--record`: sees the agent's stdout and stderr (the client's side is teed by the caller). */
  wireTap?: WireTap;
}

/** How the proxy ended. */
export interface ProxyResult {
  /** The agent's exit status (128+N for signal N; 127/126 when it could not start). */
  exitCode: number;
  /** The one-line error when the agent could not be started. */
  spawnError?: string;
}
