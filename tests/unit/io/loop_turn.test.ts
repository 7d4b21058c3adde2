/**
 * lib/io/loop_turn.ts: a chunk is cut into pieces after line ends, never inside a line,
 * sized from what the last piece cost: a cheap piece lets the next grow (at most four
 * times, up to MAX_PIECE_BYTES), a dear one shrinks it to MIN_PIECE_BYTES.
 */
import { describe, expect, test } from "bun:test";
import { LoopTurn, MAX_PIECE_BYTES, MIN_PIECE_BYTES, PIECE_MS } from "../../../lib/io/loop_turn.ts";

const enc = (s: string) => new TextEncoder().encode(s);

/** The pieces `turn` cuts `chunk` into, each reported to have cost `ms(bytes)`. */
function pieces(turn: LoopTurn, chunk: Uint8Array, ms: (bytes: number) => number): number[] {
  const ends: number[] = [];
  for (let at = 0; at < chunk.length;) {
    const end = turn.pieceEnd(chunk, at);
    expect(end).toBeGreaterThan(at);
    turn.spent(end - at, ms(end - at));
    ends.push(end);
    at = end;
  }
  return ends;
}

describe("LoopTurn pieces", () => {
  test("every piece but the last ends after a line end; together they are the chunk", () => {
    const chunk = enc("y\n".repeat(300_000) + "no end");
    const ends = pieces(new LoopTurn(), chunk, (b) => b / 1000);
    expect(ends.at(-1)).toBe(chunk.length);
    for (const end of ends.slice(0, -1)) expect(chunk[end - 1]).toBe(0x0a);
  });

  test("a cheap piece lets the next grow at most fourfold, up to the largest piece", () => {
    const chunk = enc("y\n".repeat(2_000_000));
    const ends = pieces(new LoopTurn(), chunk, () => 0);
    const sizes = ends.map((end, i) => end - (i === 0 ? 0 : ends[i - 1]));
    expect(sizes[0]).toBe(MIN_PIECE_BYTES);
    for (let i = 1; i < sizes.length - 1; i++) {
      expect(sizes[i]).toBeLessThanOrEqual(4 * sizes[i - 1]);
      expect(sizes[i]).toBeLessThanOrEqual(MAX_PIECE_BYTES);
    }
    expect(Math.max(...sizes)).toBe(MAX_PIECE_BYTES);
  });

  test("a dear piece brings the next down to what fits PIECE_MS, not below the smallest", () => {
    const turn = new LoopTurn();
    const chunk = enc("y\n".repeat(2_000_000));
    turn.spent(MAX_PIECE_BYTES, 0);
    turn.spent(MAX_PIECE_BYTES, 0);
    expect(turn.pieceEnd(chunk, 0)).toBe(MAX_PIECE_BYTES);
    // 64 KiB took 4 PIECE_MS: the next piece is 16 KiB.
    turn.spent(64 * 1024, 4 * PIECE_MS);
    expect(turn.pieceEnd(chunk, 0)).toBe(16 * 1024);
    turn.spent(64 * 1024, 1000);
    expect(turn.pieceEnd(chunk, 0)).toBe(MIN_PIECE_BYTES);
  });

  test("a line longer than the piece stays whole; a chunk without a line end is one piece", () => {
    const long = "x".repeat(3 * MIN_PIECE_BYTES) + "\n";
    const chunk = enc(long + "y\n");
    expect(new LoopTurn().pieceEnd(chunk, 0)).toBe(long.length);
    const open = enc("x".repeat(3 * MIN_PIECE_BYTES));
    expect(new LoopTurn().pieceEnd(open, 0)).toBe(open.length);
  });
});
