/**
 * The proxy's functional core, table-tested: line splitting, message reading, request
 * tracking, turn state, error classification, rewrites and the end-of-turn decision.
 */
import { isRetryable, retryReason } from "../lib/core/retry_hint.ts";
import { describe, expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { compileAnchor, DeclarativeAnchorSchema } from "../lib/cause/anchors.ts";
import { buildClassifier, type Classifier } from "../lib/cause/classifier.ts";
import * as v from "valibot";
import { concludeTurn, exitMessage, type TurnEnd } from "../lib/proxy/conclude.ts";
import {
  echoesInput,
  errorCause,
  errorInput,
  looksLikeJson,
  providerMessage,
  readableMessage,
} from "../lib/cause/error_cause.ts";
import { idKey, parseMessage } from "../lib/acp/jsonrpc.ts";
import { lineEnding, LineSplitter, type Segment } from "../lib/acp/lines.ts";
import { LineOutput } from "../lib/proxy/output.ts";
import {
  annotateError,
  errorResponse,
  isHttpStatusCode,
  isJsonRpcCode,
} from "../lib/proxy/rewrite.ts";
import { PendingRequests } from "../lib/acp/tracker.ts";
import {
  peekChunkText,
  peekedSessionId,
  peekUpdate,
  spanText,
  type UpdatePeek,
  utf16Length,
} from "../lib/acp/peek.ts";
import {
  observeUpdate,
  observeUpdateLine,
  streamed,
  type Turn,
  Turns,
  turnText,
} from "../lib/proxy/turns.ts";
import type { TextKeeping } from "../lib/proxy/reply_text.ts";
import type { Cause } from "../lib/core/decide.ts";
import { AnchorSchema, defineAnchor } from "../lib/plugin/api.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

function split(limit: number, chunks: string[], end = true): Array<[string, string, boolean?]> {
  const splitter = new LineSplitter(limit);
  const out: Array<[string, string, boolean?]> = [];
  const emit = (s: Segment) =>
    out.push(s.kind === "line" ? ["line", dec(s.bytes)] : ["pass", dec(s.bytes), s.end]);
  for (const c of chunks) splitter.push(enc(c), emit);
  if (end) splitter.end(emit);
  return out;
}

describe("LineSplitter", () => {
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

describe("parseMessage", () => {
  test.each(
    [
      ['{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"a":1}}\n', {
        kind: "request",
        id: 1,
        method: "session/prompt",
        params: { a: 1 },
      }],
      ['{"jsonrpc":"2.0","id":"x","method":"m"}', {
        kind: "request",
        id: "x",
        method: "m",
        params: undefined,
      }],
      ['{"jsonrpc":"2.0","method":"session/update","params":{}}\r\n', {
        kind: "notification",
        method: "session/update",
        params: {},
      }],
      ['{"jsonrpc":"2.0","id":3,"result":null}', {
        kind: "result",
        id: 3,
        result: null,
        raw: { jsonrpc: "2.0", id: 3, result: null },
      }],
      ['{"jsonrpc":"2.0","id":null,"error":{"code":1}}', {
        kind: "error",
        id: null,
        error: { code: 1 },
        raw: { jsonrpc: "2.0", id: null, error: { code: 1 } },
      }],
      ["[1,2]", null],
      ["not json", null],
      ["", null],
      ['{"id":{"x":1},"method":"m"}', null],
      ['{"id":1}', null],
    ] as const,
  )("%j", (line, expected) => {
    expect(parseMessage(enc(line))).toEqual(expected as never);
  });

  test('ids 1 and "1" are different keys', () => {
    expect(idKey(1)).not.toBe(idKey("1"));
  });
});

describe("PendingRequests", () => {
  test("tracks by id, counts per session, a reused id waits behind the first", () => {
    const p = new PendingRequests();
    p.add(1, "session/prompt", "s1");
    p.add("1", "session/new", null);
    p.add(2, "session/request_permission", "s1");
    expect([p.size, p.countFor("s1"), p.countFor("s2")]).toEqual([3, 2, 0]);
    expect(p.take(1)?.method).toBe("session/prompt");
    expect(p.take(1)).toBeUndefined();
    expect(p.get("1")?.method).toBe("session/new");
    // A duplicate in-flight id: both requests wait, each is answered once (oldest first).
    p.add(2, "other", "s2");
    expect([p.size, p.countFor("s1"), p.countFor("s2")]).toEqual([3, 1, 1]);
    expect(p.all().map((r) => r.method)).toEqual([
      "session/new",
      "session/request_permission",
      "other",
    ]);
    expect(p.take(2)?.method).toBe("session/request_permission");
    expect(p.take(2)?.method).toBe("other");
    expect(p.take(2)).toBeUndefined();
    // null and non-finite ids are ids like any other.
    p.add(null, "x", null);
    p.add(Infinity, "y", null);
    expect([p.take(null)?.method, p.take(Infinity)?.method, p.size]).toEqual(["x", "y", 1]);
  });
});

const snapshot = { patterns: [], files: new Map(), takenAt: 0, diagnostics: [] };
function turn(keepText: TextKeeping = "reply"): Turn {
  return new Turns().start({
    sessionId: "s1",
    requestId: 7,
    promptLine: enc("{}\n"),
    promptMeta: { trace: "t" },
    startedAt: 1000,
    snapshot,
    trackToolCalls: true,
    keepText,
  });
}

const fakePeek = (kind: string): UpdatePeek => ({
  lineStart: 0,
  lineEnd: 2,
  idStart: 0,
  idEnd: 0,
  kind,
  end: 0,
});

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

describe("turn state", () => {
  test("message chunks are counted and kept, other output counts as activity", () => {
    const t = turn();
    const updates = [
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "héllo " } },
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "wörld" } },
      { sessionUpdate: "agent_message_chunk", content: { type: "image", data: "..." } },
      { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } },
      { sessionUpdate: "plan", entries: [] },
      { sessionUpdate: "usage_update", used: 1 },
      { sessionUpdate: "available_commands_update", availableCommands: [] },
      { sessionUpdate: "some_future_kind" },
      { noKind: true },
      "not an object",
    ];
    updates.forEach((u, i) => observeUpdate(t, u, 2000 + i));
    expect([t.chars, t.activity, turnText(t), streamed(t)]).toEqual([11, 3, "héllo wörld", 14]);
    expect(t.lastActivityAt).toBe(2007);
  });

  test("tool calls are joined by toolCallId, parsed or peeked, in order", () => {
    const t = turn();
    const line = (update: unknown) =>
      enc(
        JSON.stringify({
          jsonrpc: "2.0",
          method: "session/update",
          params: { sessionId: "s1", update },
        }) + "\n",
      );
    const first = {
      sessionUpdate: "tool_call",
      toolCallId: "a",
      title: "Read",
      status: "pending",
      rawInput: { p: 1 },
    };
    const feed = (update: unknown, now: number) => {
      const l = line(update);
      observeUpdateLine(t, peekUpdate(l)!, l, now);
    };
    feed(first, 1);
    observeUpdate(t, { sessionUpdate: "tool_call", toolCallId: "b", title: "Other" }, 2);
    feed({
      sessionUpdate: "tool_call_update",
      toolCallId: "a",
      status: "completed",
      rawOutput: "ok",
    }, 3);
    expect(t.pendingToolLines.length).toBe(1);
    expect([...t.toolCalls.values()]).toEqual([
      { toolCallId: "a", title: "Read", status: "completed", rawInput: { p: 1 }, rawOutput: "ok" },
      { toolCallId: "b", title: "Other" },
    ]);
    expect([t.pendingToolLines.length, t.activity, t.lastActivityAt]).toEqual([0, 3, 3]);
  });

  test("without a reader, tool calls are only counted", () => {
    const t = new Turns().start({
      sessionId: "s",
      requestId: 1,
      promptLine: enc(""),
      promptMeta: null,
      startedAt: 0,
      snapshot,
      trackToolCalls: false,
    });
    observeUpdate(t, { sessionUpdate: "tool_call", toolCallId: "a" }, 1);
    observeUpdateLine(t, fakePeek("tool_call_update"), enc("{}"), 2);
    expect([t.activity, t.pendingToolLines.length, t.toolCalls.size]).toEqual([2, 0, 0]);
  });

  test("peeked message chunks are read for their text", () => {
    const t = turn();
    const chunk = enc(
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hé"}}}}\n',
    );
    observeUpdateLine(t, peekUpdate(chunk)!, chunk, 5);
    observeUpdateLine(t, fakePeek("usage_update"), enc("{}"), 6);
    observeUpdateLine(t, fakePeek("plan"), enc("{}"), 7);
    expect([t.chars, turnText(t), t.activity, t.lastActivityAt]).toEqual([2, "hé", 1, 7]);
  });

  test("kept text is capped at 64 KiB of UTF-8, cut on a character; chars count everything", () => {
    const t = turn();
    for (let i = 0; i < 30_000; i++) {
      observeUpdate(t, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: "é€" },
      }, 0);
    }
    const text = turnText(t);
    expect(t.chars).toBe(60_000);
    expect(new TextEncoder().encode(text).length).toBe(65_535);
    expect(text.endsWith("é€")).toBe(true);
  });

  test("sessions never mix; overlapping prompts route updates to the newest", () => {
    const turns = new Turns();
    const base = {
      promptLine: enc(""),
      promptMeta: undefined,
      startedAt: 0,
      snapshot,
      trackToolCalls: true,
    };
    const a = turns.start({ ...base, sessionId: "a", requestId: 1 });
    const b = turns.start({ ...base, sessionId: "b", requestId: "1" });
    expect([turns.forSession("a"), turns.forSession("b"), turns.forRequest("1")]).toEqual([
      a,
      b,
      b,
    ]);
    const a2 = turns.start({ ...base, sessionId: "a", requestId: 2 });
    expect([a2.turn, turns.forSession("a") === a2, turns.size]).toEqual([2, true, 3]);
    turns.end(a);
    expect([turns.forSession("a") === a2, turns.size]).toEqual([true, 2]);
  });
});

describe("provider messages", () => {
  test.each([
    [
      '{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}',
      "Quota exceeded",
    ],
    ['[{"error":{"code":503,"message":"The model is overloaded."}}]', "The model is overloaded."],
    ['got status: 429 Too Many Requests. {"error":{"message":"slow down"}}', "slow down"],
    [
      '{"error":{"message":"{\\n  \\"error\\": {\\n    \\"code\\": 429,\\n    \\"message\\": \\"inner\\"\\n  }\\n}"}}',
      "inner",
    ],
    [
      '{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests exceeded"}}',
      "Number of requests exceeded",
    ],
    ['{"detail":"Not authenticated"}', "Not authenticated"],
    ['{"error":"invalid_api_key"}', "invalid_api_key"],
    ["plain words, no JSON", null],
    ["{broken json", null],
    ['{"code":429}', null],
  ])("%s → %j", (text, expected) => {
    expect(providerMessage(text)).toBe(expected);
  });

  test.each([
    [{ code: 429, message: '{"error":{"message":"Quota exceeded"}}' }, "Quota exceeded"],
    [{
      code: -32603,
      message: "Internal error",
      data: { errorKind: "rate_limit", message: "Rate limited" },
    }, "Rate limited"],
    [
      {
        code: -32603,
        message: "Internal error",
        data: { details: '{"error":{"message":"deep"}}' },
      },
      "deep",
    ],
    [{ code: -32603, message: "Internal error", data: "upstream said no" }, "upstream said no"],
    [{ code: -32603, message: "Internal error" }, "Internal error"],
    [{ code: 7, message: "" }, "error 7"],
    [{ code: -32000, message: "Authentication required" }, "Authentication required"],
    [{ code: 1, message: { nested: true } }, '{"nested":true}'],
    [{ code: 1, message: "line one\n  line two" }, "line one line two"],
  ])("readableMessage(%j) = %j", (error, expected) => {
    expect(readableMessage(error)).toBe(expected);
  });

  test.each([
    ['{"a":1}', true],
    ['text"} (code 1)', true],
    ["a, b: c", false],
    ["Quota exceeded. Resets in 3h.", false],
  ])("looksLikeJson(%j) = %j", (text, expected) => expect(looksLikeJson(text)).toBe(expected));

  test("an anchor that echoes the error's text is no readable message", () => {
    const input = errorInput({ code: 429, message: "Too Many Requests", data: "see upstream" });
    expect(echoesInput("Too Many Requests see upstream (code 429)", input)).toBe(true);
    expect(echoesInput("see upstream (code 429)", input)).toBe(true);
    expect(echoesInput("Too Many Requests", input)).toBe(false);
    const plain = errorInput({ message: "Too Many Requests" });
    expect(echoesInput("Many Requests", plain)).toBe(false);
  });
});

/** A classifier of anchors made here, with generic categories, so the tests own them. */
function anchors(): Classifier {
  const decl = (o: Record<string, unknown>) =>
    v.parse(AnchorSchema, compileAnchor(v.parse(DeclarativeAnchorSchema, o)));
  return buildClassifier([
    decl({
      id: "t.quota",
      regex: "quota (reached|exceeded)|usage limit",
      ignore_case: true,
      category: "quota",
      priority: 90,
      on: ["text", "error"],
    }),
    decl({
      id: "t.rate",
      regex: "\\b429\\b|too many requests|rate limit",
      ignore_case: true,
      category: "rate_limit",
      priority: 80,
      on: ["text", "error"],
    }),
    decl({ id: "t.log", literal: "agent executor error:", priority: 300 }),
    v.parse(
      AnchorSchema,
      defineAnchor({
        id: "t.pack",
        priority: 200,
        on: ["error"],
        match: (input) =>
          input.kind === "error" &&
            (input.error.data as { kind?: string } | undefined)?.kind === "auth"
            ? { cause: "Please log in again", category: "auth", code: 401 }
            : null,
      }),
    ),
  ]);
}

describe("errorCause", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  test("HTTP status as code, provider JSON as message, retryDelay in details", () => {
    const { cause } = errorCause(
      {
        code: 429,
        message: JSON.stringify({
          error: {
            code: 429,
            message: "Quota exceeded for metric",
            status: "RESOURCE_EXHAUSTED",
            details: [{ retryDelay: "37s" }],
          },
        }),
      },
      anchors(),
      now,
    );
    expect(cause).toEqual({
      error: {
        code: 429,
        message: "Quota exceeded for metric",
        category: "quota",
        anchor: "t.quota",
        source: null,
      },
      retry: {
        retryable: true,
        reason: "quota: retry in 37s",
        afterMs: 37_000,
        at: "2026-01-01T00:00:37.000Z",
      },
    });
  });

  test("a pack's readable cause and code win", () => {
    const { cause } = errorCause(
      { code: -32603, message: "Internal error", data: { kind: "auth" } },
      anchors(),
      now,
    );
    expect(cause.error).toEqual({
      code: 401,
      message: "Please log in again",
      category: "auth",
      anchor: "t.pack",
      source: null,
    });
    expect(cause.retry.retryable).toBe(false);
  });

  test("no anchor: the error's own message, category unknown", () => {
    const { cause } = errorCause(
      { code: -32603, message: "Internal error", data: { message: "disk on fire" } },
      anchors(),
      now,
    );
    expect(cause.error).toEqual({
      code: -32603,
      message: "disk on fire",
      category: "unknown",
      anchor: null,
      source: null,
    });
  });
});

describe("rewrites", () => {
  const tg = { status: "failed", category: "rate_limit", message: "slow down", retry: null };
  test.each([
    ["data absent: created", { code: 429, message: "raw" }, false, {
      code: 429,
      message: "raw",
      data: { turnguard: tg },
    }],
    ["object data: member added", { code: 429, message: "raw", data: { a: 1 } }, false, {
      code: 429,
      message: "raw",
      data: { a: 1, turnguard: tg },
    }],
    ["string data: left alone", { code: 429, message: "raw", data: "s" }, false, {
      code: 429,
      message: "raw",
      data: "s",
    }],
    ["null data: left alone", { code: 429, message: "raw", data: null }, false, {
      code: 429,
      message: "raw",
      data: null,
    }],
    ["rewrite: HTTP code and message replaced", { code: 429, message: "raw" }, true, {
      code: -32603,
      message: "slow down",
      data: { turnguard: { ...tg, originalCode: 429, originalMessage: "raw" } },
    }],
    ["rewrite: JSON-RPC code kept", { code: -32000, message: "raw" }, true, {
      code: -32000,
      message: "slow down",
      data: { turnguard: { ...tg, originalMessage: "raw" } },
    }],
    ["rewrite: string code replaced", { code: "E429", message: "slow down" }, true, {
      code: -32603,
      message: "slow down",
      data: { turnguard: { ...tg, originalCode: "E429" } },
    }],
  ])("%s", (_name, error, rewrite, expected) => {
    const response = { jsonrpc: "2.0", id: 4, error, extra: true };
    expect(annotateError(response, tg, rewrite)).toEqual({
      jsonrpc: "2.0",
      id: 4,
      error: expected,
      extra: true,
    });
  });

  test("a fresh error response", () => {
    expect(errorResponse("x", "m", { status: "failed" })).toEqual({
      jsonrpc: "2.0",
      id: "x",
      error: { code: -32603, message: "m", data: { turnguard: { status: "failed" } } },
    });
  });

  test.each([
    [429, true, false],
    [503, true, false],
    [-32603, false, true],
    [0, false, true],
    [600, false, true],
    [42.5, false, false],
    ["429", false, false],
  ])(
    "code %j: HTTP status %j, JSON-RPC code %j",
    (code, http, rpc) => {
      expect([isHttpStatusCode(code), isJsonRpcCode(code)]).toEqual([http, rpc]);
    },
  );

  test.each([
    [3, null, "fatal", "agent exited with status 3: fatal"],
    [0, null, "", "agent exited with status 0"],
    [null, "SIGKILL", "  ", "agent exited with status 137 (killed by SIGKILL)"],
  ])("exitMessage(%j, %j, %j)", (code, signal, tail, expected) => {
    expect(exitMessage(code, signal, tail)).toBe(expected);
  });
});

describe("concludeTurn", () => {
  const logCause: Cause = {
    error: {
      code: 429,
      message: "Individual quota reached",
      category: "quota",
      anchor: "t.log",
      source: { path: "/l", offset: 3 },
    },
    retry: { retryable: false, reason: "quota: no reset time given", afterMs: null, at: null },
  };
  function conclude(t: Turn, end: TurnEnd, found: Cause | null = null, rewriteErrors = false) {
    let scanned = 0;
    const c = concludeTurn({
      turn: t,
      end,
      agent: "fake",
      classifier: anchors(),
      endedAt: 5000,
      rewriteErrors,
      scanLogs:
        () => (scanned++, { cause: found, diagnostics: found ? [] : ["nothing in the log"] }),
    });
    return { ...c, scanned };
  }
  const result = (stopReason: string): TurnEnd => ({
    kind: "result",
    result: { stopReason },
    response: { jsonrpc: "2.0", id: 7, result: { stopReason } },
  });
  const say = (t: Turn, text: string) =>
    observeUpdate(t, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } }, 0);

  test("empty end_turn with a log cause → the client gets the cause as -32603", () => {
    const c = conclude(turn(), result("end_turn"), logCause);
    expect(c.scanned).toBe(1);
    expect(c.outcome).toMatchObject({
      mode: "proxy",
      agent: "fake",
      session: "s1",
      turn: 1,
      status: "failed",
      stopReason: "end_turn",
      durationMs: 4000,
      error: logCause.error,
    });
    expect(c.response).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32603,
        message: "Individual quota reached",
        data: {
          turnguard: {
            status: "failed",
            category: "quota",
            message: "Individual quota reached",
            code: 429,
            anchor: "t.log",
            retry: logCause.retry,
            source: { path: "/l", offset: 3 },
            stopReason: "end_turn",
          },
        },
      },
    });
  });

  test("empty end_turn without a cause stays empty and unchanged", () => {
    const c = conclude(turn(), result("end_turn"));
    expect([c.outcome.status, c.response, c.outcome.diagnostics]).toEqual(["empty", null, [
      "nothing in the log",
    ]]);
  });

  test("a streamed answer is ok and the log is not read", () => {
    const t = turn();
    say(t, "Here is the refactored function, with tests.");
    const c = conclude(t, result("end_turn"), logCause);
    expect([c.outcome.status, c.response, c.scanned, c.outcome.reply]).toEqual(["ok", null, 0, {
      chars: 44,
      text: "Here is the refactored function, with tests.",
    }]);
  });

  test.each([["max_tokens", "truncated"], ["max_turn_requests", "truncated"], [
    "refusal",
    "refused",
  ], ["cancelled", "cancelled"]])(
    "%s → %s, response unchanged, even when empty",
    (reason, status) => {
      const c = conclude(turn(), result(reason), logCause);
      expect([c.outcome.status, c.outcome.stopReason, c.response]).toEqual([status, reason, null]);
    },
  );

  test("a client cancel wins over an empty end_turn", () => {
    const t = turn();
    t.cancelled = true;
    const c = conclude(t, result("end_turn"), logCause);
    expect([c.outcome.status, c.response, c.scanned]).toEqual(["cancelled", null, 0]);
  });

  test("an unknown agent error is sharpened by the log cause", () => {
    const c = conclude(turn(), {
      kind: "error",
      error: { code: -32603, message: "Internal error" },
      response: { jsonrpc: "2.0", id: 7, error: { code: -32603, message: "Internal error" } },
    }, logCause);
    expect(c.outcome.error).toEqual({ ...logCause.error, code: -32603 });
    expect(c.response).toMatchObject({
      error: {
        code: -32603,
        message: "Internal error",
        data: { turnguard: { category: "quota", message: "Individual quota reached" } },
      },
    });
  });

  test("a short streamed failure notice of a clean turn is a diagnostic, never an error", () => {
    const t = turn();
    say(t, "You've hit your usage limit.");
    const c = conclude(t, result("end_turn"));
    expect([c.outcome.status, c.response, c.outcome.error, c.outcome.retry])
      .toEqual(["ok", null, null, null]);
    expect(c.outcome.diagnostics).toContain(
      "the agent's reply reads as a quota failure (anchor t.quota); the turn ended normally, so it stays ok",
    );
  });

  test("a bare wrapper error takes the cause the agent streamed just before it", () => {
    const t = turn();
    say(t, "You've hit your usage limit.");
    const c = conclude(t, {
      kind: "error",
      error: { code: -32000, message: "Authentication required" },
      response: {
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32000, message: "Authentication required" },
      },
    });
    expect([c.outcome.status, c.outcome.error?.category, c.outcome.error?.message])
      .toEqual(["failed", "quota", "usage limit."]);
  });

  test("text nobody reads is not kept: counted, no reply.text", () => {
    const t = turn("none");
    say(t, "héllo");
    const line = enc(
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"wörld"}}}}\n',
    );
    observeUpdateLine(t, peekUpdate(line)!, line, 1);
    const c = conclude(t, result("end_turn"));
    expect([c.outcome.status, c.outcome.reply, turnText(t)]).toEqual(["ok", { chars: 10 }, ""]);
  });

  test("with only text anchors reading it, a failure notice is still found", () => {
    const t = turn("notice");
    say(t, "You've hit your usage limit.");
    const c = conclude(t, result("end_turn"));
    const notice = (d: string[]) => d.some((x) => x.includes("reads as a quota failure"));
    expect([c.outcome.reply, notice(c.outcome.diagnostics)]).toEqual([{ chars: 28 }, true]);
    // A long reply is cut to the notice's size, and a cut reply is no notice.
    const long = turn("notice");
    say(long, "You've hit your usage limit. ".repeat(40));
    say(long, "x".repeat(5000));
    expect(turnText(long).length).toBe(2048);
    expect(notice(conclude(long, result("end_turn")).outcome.diagnostics)).toBe(false);
  });

  test("a long answer that mentions a rate limit is just an answer", () => {
    const t = turn();
    say(t, "I added a rate limit to the API. ".repeat(80));
    const c = conclude(t, result("end_turn"));
    expect([c.outcome.status, c.outcome.error]).toEqual(["ok", null]);
  });

  test("timeout", () => {
    const c = conclude(turn(), { kind: "timeout", silentMs: 90_000 });
    expect(c.outcome).toMatchObject({
      status: "failed",
      error: {
        category: "timeout",
        message: "turn timed out: the agent streamed nothing for 1m30s",
      },
    });
    expect(c.response).toMatchObject({
      id: 7,
      error: { code: -32603, message: "turn timed out: the agent streamed nothing for 1m30s" },
    });
  });

  test("the agent died: crash unless the log says more", () => {
    const end: TurnEnd = { kind: "exit", code: 2, signal: null, stderrTail: "boom" };
    const crash = conclude(turn(), end);
    expect([crash.outcome.error?.category, crash.outcome.exit]).toEqual(["crash", {
      code: 2,
      signal: null,
    }]);
    expect(crash.response).toMatchObject({
      error: { code: -32603, message: "agent exited with status 2: boom" },
    });
    expect(crash.outcome.retry).toEqual({
      retryable: isRetryable("crash", null),
      reason: retryReason("crash", null),
      afterMs: null,
      at: null,
    });
    const known = conclude(turn(), end, logCause);
    expect([known.outcome.error?.category, known.outcome.error?.message]).toEqual([
      "quota",
      "Individual quota reached",
    ]);
    expect(known.response).toMatchObject({
      error: { message: "agent exited with status 2: boom" },
    });
  });
});

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
