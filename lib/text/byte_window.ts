/**
 * Bounded copies of a byte stream: the last N bytes (an agent's stderr, for its error
 * message) or the first N bytes (a reply kept in an outcome). Both decode on a UTF-8
 * character boundary, so a cut never leaves a broken character behind.
 */

/** Joins chunks into one byte array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) all.set(c, at), at += c.length;
  return all;
}

/** A byte a key or token is made of (letters, digits, `-_+/=.~`). */
function isTokenByte(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) || "-_+/=.~".includes(String.fromCharCode(byte));
}

/** Keeps the last `limit` bytes pushed into it. */
export class Tail {
  #chunks: Uint8Array[] = [];
  #size = 0;
  constructor(readonly limit: number) {}
  /** Adds a chunk, dropping whole old chunks that are no longer needed. */
  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#chunks.length > 1 && this.#size - this.#chunks[0].length >= this.limit) {
      this.#size -= this.#chunks.shift()!.length;
    }
  }
  /**
   * The kept bytes as text, starting at the first whole character within the limit. When
   * the cut falls inside a run of token characters, the rest of that run is dropped too
   * (unless it is all there is): the tail of a key alone matches no redaction shape
   * (lib/text/redact.ts).
   */
  text(): string {
    const all = concatBytes(this.#chunks);
    let start = Math.max(0, all.length - this.limit);
    if (start > 0 && isTokenByte(all[start - 1])) {
      let end = start;
      while (end < all.length && isTokenByte(all[end])) end++;
      if (end < all.length) start = end;
    }
    while (start < all.length && (all[start] & 0xc0) === 0x80) start++;
    return new TextDecoder().decode(all.subarray(start));
  }
}

/** Keeps the first `limit` bytes pushed into it. */
export class Head {
  #chunks: Uint8Array[] = [];
  #size = 0;
  /** Whether bytes beyond the limit were dropped. */
  truncated = false;
  constructor(readonly limit: number) {}
  /** Adds a chunk; bytes past the limit are counted as dropped, never stored. */
  push(chunk: Uint8Array): void {
    const room = this.limit - this.#size;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#chunks.push(kept);
    this.#size += kept.length;
  }
  /** The kept bytes as text, ending at the last whole character within the limit. */
  text(): string {
    const all = concatBytes(this.#chunks);
    let end = all.length;
    if (this.truncated) {
      // Step back to the start of the last (possibly cut) character, then keep it only
      // if all of its bytes are present.
      let lead = end - 1;
      while (lead > 0 && (all[lead] & 0xc0) === 0x80) lead--;
      const need = all[lead] >= 0xf0 ? 4 : all[lead] >= 0xe0 ? 3 : all[lead] >= 0xc0 ? 2 : 1;
      if (end - lead < need) end = lead;
    }
    return new TextDecoder().decode(all.subarray(0, end));
  }
}
