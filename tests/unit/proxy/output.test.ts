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
