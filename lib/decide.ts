/**
 * decide: the true outcome of a turn as a pure function of its facts. Table-tested over
 * every combination; everything that touches processes, files and clocks stays outside.
 */
import type { RetryHint, Status, TurnError } from "./outcome.ts";

/** A classified cause: the error as the Outcome shows it and its retry hint. */
export interface Cause {
  error: TurnError;
  retry: RetryHint;
}

/** Everything known about a turn when it ends. */
export interface TurnFacts {
  /** turnguard was asked to stop the turn (a forwarded signal, or session/cancel). */
  cancelled: boolean;
  /** Run mode: how the agent process ended. */
  exit: { code: number | null; signal: string | null } | null;
  /** Proxy mode: the agent's stopReason, when it answered with a result. */
  stopReason: string | null;
  /** The failure the agent reported itself (non-zero exit's stderr, a JSON-RPC error). */
  agentError: Cause | null;
  /** Bytes of stdout (run) or characters streamed (proxy). */
  output: number;
  /** The cause found in the turn's appended log bytes. */
  logCause: Cause | null;
  /** The turn was cut short by turnguard's silence timeout. */
  timeout: Cause | null;
}

/** What decide concludes. `swallowed`: the agent hid this failure (exit 0 or end_turn). */
export interface Decision {
  status: Status;
  error: TurnError | null;
  retry: RetryHint | null;
  swallowed: boolean;
}

const ok = (status: Status): Decision => ({ status, error: null, retry: null, swallowed: false });
const failed = (cause: Cause, swallowed = false): Decision => ({
  status: "failed",
  error: cause.error,
  retry: cause.retry,
  swallowed,
});

/** A generic agent error ("Internal error") yields to a specific cause found in the log. */
function sharpen(agent: Cause, log: Cause | null): Cause {
  if (!log || agent.error.category !== "unknown") return agent;
  return { error: { ...log.error, code: agent.error.code ?? log.error.code }, retry: log.retry };
}

/** The fallback cause when a process failed and said nothing anywhere. */
export function exitCause(exit: { code: number | null; signal: string | null }): Cause {
  const message = exit.signal
    ? `killed by signal ${exit.signal}`
    : `exited with status ${exit.code}`;
  return {
    error: {
      code: exit.code,
      message,
      category: exit.signal ? "crash" : "unknown",
      anchor: null,
      source: null,
    },
    retry: {
      retryable: false,
      reason: "the agent failed without a known cause",
      afterMs: null,
      at: null,
    },
  };
}

/** Decides a turn's status, error and retry hint. */
export function decide(f: TurnFacts): Decision {
  if (f.timeout) return failed(f.timeout);
  if (f.cancelled || f.stopReason === "cancelled") return ok("cancelled");
  if (f.exit) {
    const { code, signal } = f.exit;
    if (signal !== null || (code !== null && code !== 0)) {
      return failed(
        f.agentError ? sharpen(f.agentError, f.logCause) : f.logCause ?? exitCause(f.exit),
      );
    }
  }
  if (f.agentError) return failed(sharpen(f.agentError, f.logCause));
  switch (f.stopReason) {
    case "refusal":
      return ok("refused");
    case "max_tokens":
    case "max_turn_requests":
      return ok("truncated");
  }
  if (f.output > 0) return ok("ok");
  if (f.logCause) return failed(f.logCause, true);
  return ok("empty");
}
