/**
 * `LineOutput` (lib/proxy/output.ts): ordered, line-aware output.
 */
import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { LineOutput } from "../../../lib/proxy/output.ts";
import { dec, enc } from "../../helpers/units.ts";

describe("LineOutput", () => {
  async function collect(sink: PassThrough): Promise<string> {
    let out = "";
    sink.on("data", (c: Uint8Array) => out += dec(c));
    await new Promise((r) => setTimeout(r, 20));
    return out;
  }

  test("a response decided later keeps its place", async () => {
    const sink = new PassThrough();
    const out = new LineOutput(sink);
    let release!: (b: Uint8Array) => void;
    out.write(enc("a\n"));
    out.writeLater(new Promise((r) => release = r));
    out.write(enc("c\n"));
    setTimeout(() => release(enc("b\n")), 5);
    await out.flushed();
    expect(await collect(sink)).toBe("a\nb\nc\n");
  });

  test("pieces go to a sink that takes several in one call; else one by one, in order", async () => {
    const calls: string[][] = [];
    const sink = {
      write: (b: Uint8Array) => (calls.push([dec(b)]), true),
      writev: (parts: readonly Uint8Array[]) => (calls.push(parts.map(dec)), true),
      end: () => {},
      on: () => sink,
    };
    const out = new LineOutput(sink);
    out.writeParts([enc("a"), enc("b\n")]);
    // A line of ours waits for the streaming line's end: the pieces go one by one then.
    out.write(enc("par"));
    out.inject(enc("mine\n"));
    out.writeParts([enc("tial\n"), enc("c\n")]);
    expect(calls).toEqual([["a", "b\n"], ["par"], ["tial\n"], ["mine\n"], ["c\n"]]);
    // A Node stream takes one piece at a time: small pieces are joined into one write.
    const node = new PassThrough();
    const outNode = new LineOutput(node);
    outNode.writeParts([enc("x"), enc("y\n")]);
    expect(await collect(node)).toBe("xy\n");
  });

  test("turnguard's own lines wait for the end of a streaming line", async () => {
    const sink = new PassThrough();
    const out = new LineOutput(sink);
    out.write(enc("par"));
    out.inject(enc("mine\n"));
    out.write(enc("tial"));
    out.write(enc("\nnext\n"));
    expect(await collect(sink)).toBe("partial\nmine\nnext\n");
  });

  test("after the peer's end, an unterminated line is closed only if a line of ours waits", async () => {
    const a = new PassThrough();
    const outA = new LineOutput(a);
    outA.write(enc("last"));
    outA.finish();
    expect(await collect(a)).toBe("last");
    const b = new PassThrough();
    const outB = new LineOutput(b);
    outB.write(enc("last"));
    outB.inject(enc("mine\n"));
    outB.finish();
    expect(await collect(b)).toBe("last\nmine\n");
  });
});
