/**
 * The publish gate: whether turnguard must publish a turn's reply itself. A pure function
 * of the turn's facts, table-tested over every stop reason.
 */

/** What the gate looks at. */
export interface GateInput {
  /** Publish fallback armed for this profile. */
  armed: boolean;
  /** The agent's stopReason, or null when it answered `session/prompt` with an error. */
  stopReason: string | null;
  /** The turn ended with a JSON-RPC error (or turnguard decided it failed). */
  failed: boolean;
  /** The channel the reply belongs to, from the turn variables. */
  channel: string | null;
  /** A successful publish to this channel (or to no named channel) was detected. */
  published: boolean;
  /** The turn's buffered `agent_message_chunk` text. */
  text: string;
}

/** Why the gate held the fallback back. */
export type GateReason =
  | "disarmed"
  | "not_end_turn"
  | "failed"
  | "no_channel"
  | "published"
  | "blank";

/** The gate's answer. */
export type GateVerdict = { fallback: true } | { fallback: false; reason: GateReason };

/**
 * Fallback only when: armed, the turn ended cleanly with `end_turn` (never `refusal`,
 * `max_tokens`, `max_turn_requests`, `cancelled`, nor an error), the turn has a channel,
 * no successful publish was detected, and there is non-blank text to send.
 */
export function publishGate(input: GateInput): GateVerdict {
  if (!input.armed) return { fallback: false, reason: "disarmed" };
  if (input.failed) return { fallback: false, reason: "failed" };
  if (input.stopReason !== "end_turn") return { fallback: false, reason: "not_end_turn" };
  if (input.published) return { fallback: false, reason: "published" };
  if (input.text.trim() === "") return { fallback: false, reason: "blank" };
  if (input.channel === null || input.channel === "") {
    return { fallback: false, reason: "no_channel" };
  }
  return { fallback: true };
}
