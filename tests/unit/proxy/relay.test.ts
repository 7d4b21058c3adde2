/**
 * The byte relay (lib/proxy/relay.ts): lines pass untouched in as few writes as the chunk
 * allows, a reader's verdict replaces, drops or defers a line in its place, and a reader
 * that throws costs nothing but one stderr line.
 */
import { Buffer } from "node:buffer";
import { describe, expect, test } from "bun:test";
import { LineSplitter } from "../../../lib/acp/lines.ts";
import { LineOutput } from "../../../lib/proxy/output.ts";
import {
  drain,
  DROP,
  Guard,
  hasBytes,
  hasBytesIn,
  type LineReader,
  PASS,
  pump,
} from "../../../lib/proxy/relay.ts";
import { dec, enc } from "../../helpers/units.ts";

/** A sink that keeps every write apart. */
function sink() {
  const writes: string[] = [];
  return {
    writes,
    write: (b: Uint8Array) => (writes.push(dec(b)), true),
    end: () => {},
    on: () => {},
  };
}

function relay(reader: LineReader, chunks: string[], limit = 1024) {
  const s = sink();
  const out = new LineOutput(s);
  const said: string[] = [];
  const guard = new Guard({ line: (l: string) => said.push(l + "\n") });
  const splitter = new LineSplitter(limit);
  for (const c of chunks) pump(splitter, enc(c), out, reader, guard);
  drain(splitter, out, reader, guard);
  return { writes: s.writes, said, out };
}

describe("pump", () => {
  test("untouched lines of a chunk leave in one write; a replaced line in its place", () => {
    const { writes } = relay({
      line: (l) => dec(l).startsWith("b") ? { replace: enc("B\n") } : PASS,
    }, ["a1\na2\nb\nc1\nc2\n"]);
    expect(writes).toEqual(["a1\na2\n", "B\n", "c1\nc2\n"]);
  });

  test("a dropped line is gone; a line decided later keeps its place", async () => {
    let release: (b: Uint8Array) => void = () => {};
    const later = new Promise<Uint8Array | null>((r) => release = r);
    const { writes, out } = relay({
      line: (l) => dec(l) === "x\n" ? DROP : dec(l) === "y\n" ? { later } : PASS,
    }, ["a\nx\ny\n", "z\n"]);
    expect(writes).toEqual(["a\n"]);
    release(enc("Y\n"));
    await out.flushed();
    expect(writes).toEqual(["a\n", "Y\n", "z\n"]);
  });

  test("quick passes a line by its offsets; passing sees a long line's pieces", () => {
    const seen: string[] = [];
    const { writes } = relay(
      {
        line: (l) => (seen.push(`line ${dec(l).trim()}`), PASS),
        quick: (b, start, end) => dec(b.subarray(start, end)).startsWith("q"),
        passing: (piece, end) => void seen.push(`piece ${dec(piece)} ${end}`),
      },
      ["q1\nlonglong", "long\nn\n"],
      4,
    );
    expect(seen).toEqual([
      "piece longlong false",
      "piece long\n true",
      "line n",
    ]);
    expect(writes.join("")).toBe("q1\nlonglonglong\nn\n");
  });

  test("a line spanning chunks is looked at whole, once; Buffer and plain chunks alike", () => {
    // Node and Deno hand Buffers: the relay once took the lines its look passed for
    // another chunk's (compared by identity with the splitter's plain view) and lost them.
    const lines = Array.from({ length: 200 }, (_, i) => `q${i} ${"x".repeat(i * 7 % 97)}\n`);
    const text = lines.join("");
    for (const asBuffer of [false, true]) {
      for (const size of [1, 5, 64, 333]) {
        const looked: string[] = [];
        const s = sink();
        const out = new LineOutput(s);
        const guard = new Guard({ line: () => {} });
        const splitter = new LineSplitter(1024);
        const reader: LineReader = {
          line: () => PASS,
          quick: (b, start, end) => (looked.push(dec(b.subarray(start, end))), true),
        };
        const bytes = enc(text);
        for (let at = 0; at < bytes.length; at += size) {
          const piece = bytes.slice(at, at + size);
          pump(splitter, asBuffer ? Buffer.from(piece) : piece, out, reader, guard);
        }
        drain(splitter, out, reader, guard);
        expect(s.writes.join("")).toBe(text);
        expect(looked).toEqual(lines);
      }
    }
  });

  test("skim passes a chunk's whole lines at once; the line it began with and its tail as usual", () => {
    const looked: string[] = [];
    const skimmed: string[] = [];
    const reader: LineReader = {
      line: (l) => (looked.push(`line ${dec(l).trim()}`), PASS),
      quick: (b, start, end) => (looked.push(`quick ${dec(b.subarray(start, end)).trim()}`), false),
      skim: (b, start, end) => (skimmed.push(dec(b.subarray(start, end))), !dec(b).includes("no")),
    };
    const { writes } = relay(reader, ["a\nb", "b\nc\nd\ne", "e\nno\nf\n"]);
    expect(skimmed).toEqual(["a\n", "c\nd\n", "no\nf\n"]);
    // The skimmed lines were never looked at one by one; a declined skim, line by line.
    expect(looked).toEqual([
      "quick bb",
      "line bb",
      "quick ee",
      "line ee",
      "quick no",
      "line no",
      "quick f",
      "line f",
    ]);
    expect(writes.join("")).toBe("a\nbb\nc\nd\nee\nno\nf\n");
  });

  test("a reader that throws: the line passes, said once on stderr", () => {
    const { writes, said } = relay({
      line: () => {
        throw new Error("boom");
      },
    }, ["a\nb\n"]);
    expect(writes.join("")).toBe("a\nb\n");
    expect(said).toEqual(["turnguard: reading a line failed (boom); it passed through unread\n"]);
  });

  test("drain: the last line without a newline is read too", () => {
    const seen: string[] = [];
    const { writes } = relay({ line: (l) => (seen.push(dec(l)), PASS) }, ["a\nb"]);
    expect([seen, writes.join("")]).toEqual([["a\n", "b"], "a\nb"]);
  });
});

test("hasBytes finds a key anywhere in the line", () => {
  expect(hasBytes(enc('{"id":1}'), enc('"id"'))).toBe(true);
  expect(hasBytes(enc('{"method":"x"}'), enc('"id"'))).toBe(false);
  expect(hasBytes(enc('xx{"id":1}').subarray(2), enc('"id"'))).toBe(true);
});

test("hasBytesIn looks only inside its range", () => {
  const line = enc('{"id":1}\n{"x":"id"}');
  const id = enc('"id"');
  expect(hasBytesIn(line, 0, 9, id)).toBe(true);
  expect(hasBytesIn(line, 1, 5, id)).toBe(true);
  // The key straddles the range's end, or lies before its start.
  expect(hasBytesIn(line, 0, 4, id)).toBe(false);
  expect(hasBytesIn(line, 2, 9, id)).toBe(false);
  expect(hasBytesIn(line, 9, line.length, id)).toBe(true);
  expect(hasBytesIn(line, 9, line.length - 2, id)).toBe(false);
  expect(hasBytesIn(enc("y\n"), 0, 2, id)).toBe(false);
});
