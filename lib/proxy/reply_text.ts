/**
 * The reply text a proxied turn keeps: the first bytes of its `agent_message_chunk` text,
 * cut on a character boundary. Text costs memory and decoding on the hottest path, so it
 * is kept only as far as someone reads it: the whole reply (64 KiB) for the Outcome's
 * `reply.text` (journal, outcome file) and the publish fallback; only the head a short
 * failure notice fits in when just the profile's text anchors read it; nothing otherwise
 * (then characters are only counted).
 */
import { REPLY_TEXT_BYTES } from "../agent/launch.ts";
import { capUtf8 } from "../text/text.ts";

/** Longest streamed reply still read as a possible failure notice (not a real answer). */
export const FAILURE_TEXT_MAX_BYTES = 2048;

/**
 * How much text a turn keeps: `reply` (up to REPLY_TEXT_BYTES, for `reply.text` and the
 * publish fallback), `notice` (up to FAILURE_TEXT_MAX_BYTES, for the failure-notice check
 * alone) or `none`.
 */
export type TextKeeping = "reply" | "notice" | "none";

/** The bytes of UTF-8 each kind of keeping holds on to. */
export function keptBytes(keeping: TextKeeping): number {
  return keeping === "reply" ? REPLY_TEXT_BYTES : keeping === "notice" ? FAILURE_TEXT_MAX_BYTES : 0;
}

/** A bounded text buffer for one turn's message text. */
export class ReplyText {
  #parts: string[] = [];
  /** UTF-16 units kept: never more than their UTF-8 bytes, so a cheap lower bound. */
  #units = 0;

  constructor(readonly limit: number) {}

  /** Whether more text is kept; once false, callers only count characters. */
  get open(): boolean {
    return this.#units < this.limit;
  }

  /** Keeps a chunk while the text kept is short of the limit (the cut is made on reading). */
  push(text: string): void {
    if (this.#units >= this.limit || text.length === 0) return;
    this.#parts.push(text);
    this.#units += text.length;
  }

  /** The kept text: at most `limit` bytes of UTF-8, cut on a character boundary. */
  text(): string {
    if (this.#parts.length === 0) return "";
    if (this.#parts.length > 1) this.#parts = [this.#parts.join("")];
    return capUtf8(this.#parts[0], this.limit);
  }
}
