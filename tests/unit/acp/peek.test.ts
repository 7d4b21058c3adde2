/**
 * Peeking at `session/update` lines by their bytes (lib/acp/peek.ts), checked against their parse.
 */
import { describe, expect, test } from "bun:test";
import {
  peekChunkText,
  peekedSessionId,
  peekUpdate,
  spanText,
  utf16Length,
} from "../../../lib/acp/peek.ts";
import { observeUpdate, observeUpdateLine, turnText } from "../../../lib/proxy/turns.ts";
import { dec, enc, testTurn as turn } from "../../helpers/units.ts";

describe("peek", () => {
  const head = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":';
  test.each([
    [`${head}"s-1","update":{"sessionUpdate":"plan","entries":[]}}}`, "s-1", "plan"],
    [`${head}"sé","update":{"sessionUpdate":"future_kind"}}}`, "sé", "future_kind"],
    [`${head}"s\\u0031","update":{"sessionUpdate":"plan"}}}`, null, null],
    [
      `{"method":"session/update","jsonrpc":"2.0","params":{"sessionId":"s","update":{"sessionUpdate":"plan"}}}`,
      null,
      null,
    ],
    [`${head} "s","update":{"sessionUpdate":"plan"}}}`, null, null],
    [`${head}"s","update":{"content":{},"sessionUpdate":"plan"}}}`, null, null],
  ])("%s", (line, sessionId, kind) => {
    const bytes = enc(line);
    const peek = peekUpdate(bytes);
    const got: (string | null)[] = peek ? [peekedSessionId(bytes, peek), peek.kind] : [null, null];
    expect(got).toEqual([sessionId, kind]);
  });

  const chunk = (text: string, tail = "}}}}\n") =>
    enc(
      `${head}"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"${text}"${tail}`,
    );
  test.each([
    [chunk("héllo"), "héllo"],
    [chunk(""), ""],
    [chunk("a\\nb"), null],
    [chunk("x", "}}}}\r\n"), "x"],
    [chunk("x", "}}}}"), "x"],
    [chunk("x", '}}}},"extra":1}\n'), null],
    [chunk("x", ',"annotations":null}}}}\n'), null],
  ])("chunk text of %#", (line, text) => {
    const span = peekChunkText(line, peekUpdate(line)!);
    expect(span === null ? null : spanText(line, span)).toBe(text);
  });

  test("chunk text is measured in the pass that checks it", () => {
    const units = (line: Uint8Array) => peekChunkText(line, peekUpdate(line)!)?.units;
    expect(units(chunk("héllo 😀"))).toBe("héllo 😀".length);
    expect(units(chunk(""))).toBe(0);
    const raw = (text: number[]) => {
      const [before, after] = new TextDecoder().decode(chunk("MARK")).split("MARK");
      return new Uint8Array([...enc(before), ...text, ...enc(after)]);
    };
    // Not well-formed UTF-8: the decoder decides the length (null); a control character
    // anywhere refuses the fast path, before or after the bad byte.
    expect(units(raw([0x61, 0xff, 0x62]))).toBeNull();
    expect(units(raw([0x61, 0xff, 0x62]))).not.toBeUndefined();
    for (const text of [[0x61, 0x01], [0xff, 0x01], [0x01, 0xff], [0xe2, 0x82, 0x01]]) {
      expect(peekChunkText(raw(text), peekUpdate(raw(text))!)).toBeNull();
    }
  });

  test("property: a chunk's text inside a run of lines is measured as the decoder does, or declined", () => {
    let seed = 29;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const samples = ["abcd", "a", " ", "é", "€", "😀", "日本", '"', "\\", "\u0001", "\t"]
      .map((x) => [...enc(x)]);
    let measured = 0;
    for (let round = 0; round < 3000; round++) {
      const text: number[] = [];
      for (let i = 0; i < Math.floor(rand() * 40); i++) {
        if (rand() < 0.03) text.push(Math.floor(rand() * 256));
        else text.push(...samples[Math.floor(rand() * samples.length)]);
      }
      const [before, after] = dec(chunk("MARK")).split("MARK");
      const line = [...enc(before), ...text, ...enc(after)];
      // The line lies inside other bytes, looked at by its offsets.
      const lead = [...enc("x".repeat(Math.floor(rand() * 7)) + "\n")];
      const all = new Uint8Array([...lead, ...line, ...enc("{}\n")]);
      const alone = new Uint8Array(line);
      const peek = peekUpdate(all, lead.length, lead.length + line.length);
      const inside = peek && peekChunkText(all, peek);
      const span = peekChunkText(alone, peekUpdate(alone)!);
      expect(inside === null ? null : [inside.start - lead.length, inside.units]).toEqual(
        span === null ? null : [span.start, span.units],
      );
      const raw = new Uint8Array(text);
      const hasEscapeOrControl = text.some((b) => b < 0x20 || b === 0x5c || b === 0x22);
      if (hasEscapeOrControl) {
        // Declined, or (a quote) ended early and refused by the line's tail.
        if (span !== null) expect(text.includes(0x22)).toBe(true);
        continue;
      }
      expect(span).not.toBeNull();
      if (span!.units === null) continue;
      measured++;
      expect(span!.units).toBe(dec(raw).length);
    }
    expect(measured).toBeGreaterThan(300);
  });

  test("property: utf16Length agrees with the decoder, or declines", () => {
    let seed = 11;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const samples = ["a", "é", "€", "😀", "日本", "\u{10FFFF}"].map((x) => [...enc(x)]);
    let counted = 0;
    for (let round = 0; round < 5000; round++) {
      const bytes: number[] = [];
      for (let i = 0; i < 12; i++) {
        if (rand() < 0.15) bytes.push(Math.floor(rand() * 256));
        else bytes.push(...samples[Math.floor(rand() * samples.length)]);
      }
      const u8 = new Uint8Array(bytes);
      const n = utf16Length(u8, 0, u8.length);
      if (n === null) continue;
      counted++;
      expect(n).toBe(dec(u8).length);
    }
    expect(counted).toBeGreaterThan(500);
    expect(utf16Length(enc("ab😀c"), 1, 6)).toBe(3);
    expect(utf16Length(new Uint8Array([0xed, 0xa0, 0x80]), 0, 3)).toBeNull();
    expect(utf16Length(new Uint8Array([0xc0, 0x80]), 0, 2)).toBeNull();
    expect(utf16Length(new Uint8Array([0xe2, 0x82]), 0, 2)).toBeNull();
  });

  test("past the kept text, chunk lengths are counted without decoding, the same", () => {
    const t = turn();
    const big = "é".repeat(40_000);
    for (const text of [big, big, "😀 ok"]) {
      const line = chunk(text);
      observeUpdateLine(t, peekUpdate(line)!, line, 1);
    }
    expect(t.chars).toBe(80_000 + 5);
  });

  test("a chunk longer than the kept reply: only its head is decoded, the same text kept", () => {
    const cases = [
      ["x".repeat(70_000), "abc"],
      ["€".repeat(30_000), "abc"], // the cut falls inside a 3-byte character
      ["é".repeat(40_000), "😀"],
      ["short ", "😀".repeat(20_000), "tail"],
    ];
    for (const texts of cases) {
      const peeked = turn();
      const parsed = turn();
      for (const text of texts) {
        const line = chunk(text);
        observeUpdateLine(peeked, peekUpdate(line)!, line, 1);
        observeUpdate(parsed, JSON.parse(new TextDecoder().decode(line)).params.update, 1);
      }
      expect([peeked.chars, turnText(peeked)]).toEqual([parsed.chars, turnText(parsed)]);
    }
  });

  test("a line looked at inside its chunk takes no messageId from the other lines there", () => {
    // A canonical chunk line holds no messageId (its shape leaves no room for one); the
    // line next to it in the same read does. It must not be read as the first line's.
    const first = chunk("one");
    const other = enc(
      JSON.stringify({
        jsonrpc: "2.0",
        method: "session/update",
        params: {
          sessionId: "s1",
          update: {
            sessionUpdate: "agent_message_chunk",
            messageId: "m-other",
            content: { type: "text", text: "two" },
          },
        },
      }) + "\n",
    );
    const both = new Uint8Array(first.length + other.length);
    both.set(first);
    both.set(other, first.length);
    const t = turn();
    observeUpdateLine(t, peekUpdate(both, 0, first.length)!, both, 1);
    expect(t.chars).toBe(3);
    expect(t.lastMessage).toBeNull();
  });

  test("a peeked line and its parse agree", () => {
    const line = chunk("wörld");
    const t1 = turn();
    const t2 = turn();
    observeUpdateLine(t1, peekUpdate(line)!, line, 1);
    const parsed = JSON.parse(new TextDecoder().decode(line));
    observeUpdate(t2, parsed.params.update, 1);
    expect([t1.chars, turnText(t1), t1.activity]).toEqual([t2.chars, turnText(t2), t2.activity]);
  });
});
