/**
 * The reply buffer: a turn's `agent_message_chunk` text, kept only while the publish
 * fallback is armed (a disarmed buffer never stores or allocates anything), capped at
 * 64 KiB of UTF-8 — what a typical relay accepts — and cut on a character boundary.
 */
import { capUtf8, utf8Length } from "../text.ts";

/** The most reply text kept for a fallback publish, in bytes of UTF-8. */
export const REPLY_BUFFER_BYTES = 64 * 1024;

/** A bounded text buffer for one turn's reply; reset at every turn start. */
export class ReplyBuffer {
  #chunks: string[] | null = null;
  #bytes = 0;
  #truncated = false;

  constructor(readonly armed: boolean, readonly limit: number = REPLY_BUFFER_BYTES) {}

  /** Forgets the previous turn's text. */
  reset(): void {
    this.#chunks = null;
    this.#bytes = 0;
    this.#truncated = false;
  }

  /** Appends streamed text while it fits; the chunk that overflows is cut on a UTF-8 boundary. */
  push(text: string): void {
    if (!this.armed || this.#truncated || text.length === 0) return;
    const room = this.limit - this.#bytes;
    const size = utf8Length(text);
    const kept = size <= room ? text : capUtf8(text, room);
    if (size > room) this.#truncated = true;
    if (kept.length === 0) return;
    (this.#chunks ??= []).push(kept);
    this.#bytes += size <= room ? size : utf8Length(kept);
  }

  /** Bytes of UTF-8 kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Whether text was dropped because the cap was reached. */
  get truncated(): boolean {
    return this.#truncated;
  }

  /** The kept text. */
  text(): string {
    if (this.#chunks === null) return "";
    if (this.#chunks.length > 1) this.#chunks = [this.#chunks.join("")];
    return this.#chunks[0];
  }
}
