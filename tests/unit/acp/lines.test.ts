/**
 * `LineSplitter` and `lineEnding` (lib/acp/lines.ts): how the proxy cuts a stream into lines.
 */
import { describe, expect, test } from "bun:test";
import { lineEnding, LineSplitter, type Segment } from "../../../lib/acp/lines.ts";
import { dec, enc } from "../../helpers/units.ts";

function split(limit: number, chunks: string[], end = true): Array<[string, string, boolean?]> {
  const splitter = new LineSplitter(limit);
  const out: Array<[string, string, boolean?]> = [];
  const emit = (s: Segment) =>
    out.push(s.kind === "pass" ? ["pass", dec(s.bytes), s.end] : [s.kind, dec(s.bytes)]);
  for (const c of chunks) splitter.push(enc(c), emit);
  if (end) splitter.end(emit);
  return out;
}

describe("LineSplitter", () => {
  test("a line that spans chunks is looked at in one reused buffer; its pieces pass uncopied", () => {
    const splitter = new LineSplitter(1024);
    const chunks = [enc("a1\nbb"), enc("bb\ncc"), enc("c"), enc("cc\nd\n")];
    const looks: Array<{ bytes: Uint8Array; text: string }> = [];
    const segments: Array<{ kind: string; text: string; own: boolean }> = [];
    for (const chunk of chunks) {
      splitter.push(
        chunk,
        (seg) =>
          segments.push({
            kind: seg.kind,
            text: dec(seg.bytes),
            own: chunks.some((c) => c.buffer === seg.bytes.buffer),
          }),
        (bytes, start, end) => {
          looks.push({ bytes, text: dec(bytes.subarray(start, end)) });
          return dec(bytes.subarray(start, end)) !== "d\n";
        },
      );
    }
    expect(looks.map((l) => l.text)).toEqual(["a1\n", "bbbb\n", "ccccc\n", "d\n"]);
    // The two spanning lines were shown in the same scratch buffer, not a chunk.
    expect(looks[1].bytes).toBe(looks[2].bytes);
    expect(chunks.some((c) => c.buffer === looks[1].bytes.buffer)).toBe(false);
    // What the look passed comes out as the chunks' own bytes; what it did not, as a line.
    expect(segments).toEqual([
      { kind: "seen", text: "bb", own: true },
      { kind: "seen", text: "bb\n", own: true },
      { kind: "seen", text: "cc", own: true },
      { kind: "seen", text: "c", own: true },
      { kind: "seen", text: "cc\n", own: true },
      { kind: "line", text: "d\n", own: true },
    ]);
  });

  test("a long line spanning many chunks comes out whole, or passes when it goes over", () => {
    const text = new Uint8Array(3 * 1024 * 1024 + 5);
    for (let i = 0; i < text.length; i++) text[i] = 0x61 + (i % 26);
    text[text.length - 1] = 0x0a;
    const feed = (limit: number) => {
      const splitter = new LineSplitter(limit);
      const out: Segment[] = [];
      splitter.push(enc("a\nb"), (seg) => out.push({ ...seg, bytes: seg.bytes.slice() }));
      for (let at = 0; at < text.length; at += 70_000) {
        splitter.push(text.subarray(at, at + 70_000), (seg) => out.push(seg));
      }
      splitter.push(enc("z\n"), (seg) => out.push(seg));
      return out;
    };
    const whole = new Uint8Array([0x62, ...text]);
    // Held (past the size where it grows in one buffer), then one line.
    const held = feed(8 * 1024 * 1024);
    expect(held.map((s) => s.kind)).toEqual(["line", "line", "line"]);
    expect(Buffer.compare(Buffer.from(held[1].bytes), Buffer.from(whole))).toBe(0);
    // Over a limit it reaches while held: what was held passes, then the rest.
    const passed = feed(2 * 1024 * 1024);
    const pieces = passed.filter((s) => s.kind === "pass").map((s) => s.bytes);
    expect(Buffer.compare(Buffer.concat(pieces), Buffer.from(whole))).toBe(0);
    expect(passed.at(-1)).toMatchObject({ kind: "line" });
  });

  test.each(
    [
      ["one chunk, several lines", 100, ["a\nbb\r\n\nccc\n"], [
        ["line", "a\n"],
        ["line", "bb\r\n"],
        ["line", "\n"],
        ["line", "ccc\n"],
      ]],
      ["a line across chunks", 100, ["ab", "c", "d\ne"], [["line", "abcd\n"], ["line", "e"]]],
      ["a line of exactly the limit", 4, ["abc\n"], [["line", "abc\n"]]],
      ["a line one over the limit, whole in a chunk", 4, ["abcd\nx\n"], [["pass", "abcd\n", true], [
        "line",
        "x\n",
      ]]],
      ["an over-limit line streams as it arrives", 4, ["ab", "cde", "fg\nh\n"], [
        ["pass", "ab", false],
        ["pass", "cde", false],
        ["pass", "fg\n", true],
        ["line", "h\n"],
      ]],
      ["an over-limit tail, then its end", 4, ["x\nabcdef", "gh", "\n"], [
        ["line", "x\n"],
        ["pass", "abcdef", false],
        ["pass", "gh", false],
        ["pass", "\n", true],
      ]],
      ["held bytes plus a complete line over the limit", 5, ["abc", "def\nz\n"], [
        ["pass", "abc", false],
        ["pass", "def\n", true],
        ["line", "z\n"],
      ]],
      ["an unterminated over-limit line at EOF", 2, ["abcdef"], [["pass", "abcdef", false]]],
      ["empty chunks change nothing", 10, ["", "a", "", "\n"], [["line", "a\n"]]],
    ] as const,
  )("%s", (_name, limit, chunks, expected) => {
    expect(split(limit, [...chunks])).toEqual(expected.map((e) => [...e]));
  });

  test("property: segments join back to the input; whole lines are ≤ limit and end at LF", () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let round = 0; round < 300; round++) {
      const limit = 1 + Math.floor(rand() * 40);
      const alphabet = ["a", "é", "\n", "\r\n", "\n\n", "xyz"];
      let text = "";
      for (let i = 0; i < 200; i++) text += alphabet[Math.floor(rand() * alphabet.length)];
      const bytes = enc(text);
      const splitter = new LineSplitter(limit);
      const out: Uint8Array[] = [];
      const emit = (s: Segment) => {
        if (s.kind === "line") {
          expect(s.bytes.length).toBeLessThanOrEqual(limit);
        }
        out.push(s.bytes);
      };
      for (let at = 0; at < bytes.length;) {
        const n = 1 + Math.floor(rand() * 30);
        splitter.push(bytes.subarray(at, at + n), emit);
        at += n;
      }
      splitter.end(emit);
      expect(dec(new Uint8Array(out.flatMap((b) => [...b])))).toBe(text);
    }
  });

  test("never holds more than the limit", () => {
    const splitter = new LineSplitter(8);
    splitter.push(enc("1234567"), () => {});
    expect(splitter.heldBytes).toBe(7);
    splitter.push(enc("89"), () => {});
    expect([splitter.heldBytes, splitter.inOversizeLine]).toEqual([0, true]);
  });

  test("rejects a limit below 1", () => {
    expect(() => new LineSplitter(0)).toThrow("line limit must be at least 1, got 0");
  });

  test.each([["a\n", "\n"], ["a\r\n", "\r\n"], ["a", ""], ["\r", ""], ["\n", "\n"]])(
    "lineEnding(%j) = %j",
    (line, ending) => expect(lineEnding(enc(line))).toBe(ending),
  );
});
