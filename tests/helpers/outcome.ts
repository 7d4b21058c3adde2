/** Outcomes for tests that feed the journal or its readers without running an agent. */
import type { Outcome, TurnError } from "../../lib/core/outcome.ts";

/** A capacity error (503) with the given readable message. */
export function capacityError(message = "UNAVAILABLE (code 503)"): TurnError {
  return { code: 503, message, category: "capacity", anchor: null, source: null };
}

/**
 * A run-mode Outcome of `status` whose reply is `text`; a failed one carries a capacity
 * error and exit code 1. `over` replaces any field.
 */
export function testOutcome(
  status: Outcome["status"],
  text = "",
  over: Partial<Outcome> = {},
): Outcome {
  const failed = status === "failed";
  const now = new Date().toISOString();
  return {
    v: 1,
    mode: "run",
    agent: "fake",
    session: null,
    turn: 1,
    startedAt: now,
    endedAt: now,
    durationMs: 5,
    status,
    stopReason: null,
    exit: { code: failed ? 1 : 0, signal: null },
    error: failed ? capacityError() : null,
    retry: null,
    reply: { chars: text.length, text },
    publish: null,
    diagnostics: [],
    ...over,
  };
}
