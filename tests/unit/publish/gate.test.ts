import { describe, expect, test } from "bun:test";
import { type GateInput, publishGate } from "../../../lib/publish/gate.ts";
import { FAILURE_TEXT_MAX_BYTES, keptBytes, ReplyText } from "../../../lib/proxy/reply_text.ts";
import { utf8Length } from "../../../lib/text/text.ts";

const base: GateInput = {
  armed: true,
  stopReason: "end_turn",
  failed: false,
  channel: "C",
  published: false,
  text: "the answer",
};

describe("publishGate — truth table", () => {
  test("every stop reason: only end_turn falls back", () => {
    const rows: Array<[string | null, boolean, ReturnType<typeof publishGate>]> = [
      ["end_turn", false, { fallback: true }],
      ["refusal", false, { fallback: false, reason: "not_end_turn" }],
      ["max_tokens", false, { fallback: false, reason: "not_end_turn" }],
      ["max_turn_requests", false, { fallback: false, reason: "not_end_turn" }],
      ["cancelled", false, { fallback: false, reason: "not_end_turn" }],
      ["some_future_reason", false, { fallback: false, reason: "not_end_turn" }],
      [null, true, { fallback: false, reason: "failed" }],
      ["end_turn", true, { fallback: false, reason: "failed" }],
    ];
    for (const [stopReason, failed, want] of rows) {
      expect([stopReason, failed, publishGate({ ...base, stopReason, failed })])
        .toEqual([stopReason, failed, want]);
    }
  });

  test("every other condition, one at a time and together", () => {
    const rows: Array<[Partial<GateInput>, ReturnType<typeof publishGate>]> = [
      [{}, { fallback: true }],
      [{ armed: false }, { fallback: false, reason: "disarmed" }],
      [{ published: true }, { fallback: false, reason: "published" }],
      [{ channel: null }, { fallback: false, reason: "no_channel" }],
      [{ channel: "" }, { fallback: false, reason: "no_channel" }],
      [{ text: "" }, { fallback: false, reason: "blank" }],
      [{ text: " \n\t\u00a0\u2003 " }, { fallback: false, reason: "blank" }],
      [{ text: " x " }, { fallback: true }],
      [{ armed: false, stopReason: "refusal" }, { fallback: false, reason: "disarmed" }],
      [{ published: true, text: "" }, { fallback: false, reason: "published" }],
      [{ channel: null, text: "" }, { fallback: false, reason: "blank" }],
    ];
    for (const [patch, want] of rows) {
      expect([patch, publishGate({ ...base, ...patch })]).toEqual([patch, want]);
    }
  });
});

describe("ReplyText (the reply the publish fallback sends)", () => {
  test("nothing is kept when nobody reads it", () => {
    expect(keptBytes("none")).toBe(0);
    const b = new ReplyText(keptBytes("none"));
    expect(b.open).toBe(false);
    b.push("hello");
    b.push("x".repeat(100_000));
    expect(b.text()).toBe("");
  });

  test("keeps the turn's text", () => {
    const b = new ReplyText(keptBytes("reply"));
    b.push("Hello, ");
    b.push("");
    b.push("wörld");
    expect([b.open, b.text()]).toEqual([true, "Hello, wörld"]);
  });

  test("capped at 64 KiB on a multi-byte boundary", () => {
    expect(keptBytes("reply")).toBe(65536);
    const b = new ReplyText(keptBytes("reply"));
    b.push("a".repeat(65534)); // 2 bytes of room left
    b.push("€€"); // 3 bytes each: not even one fits
    expect(b.open).toBe(false);
    b.push("more");
    expect(b.text()).toBe("a".repeat(65534));

    const c = new ReplyText(keptBytes("reply"));
    c.push("a".repeat(65533));
    c.push("é€😀"); // 2 + 3 + 4 bytes: é fits (65535), € would end at 65538
    expect(c.text()).toBe("a".repeat(65533) + "é");
    expect(utf8Length(c.text())).toBe(65535);

    const d = new ReplyText(keptBytes("reply"));
    for (let i = 0; i < 20_000; i++) d.push("😀"); // 80 000 bytes of 4-byte characters
    expect(utf8Length(d.text())).toBe(65536);
    expect(d.text()).toBe("😀".repeat(16384));
  });

  test("a failure notice's head only, when just text anchors read it", () => {
    expect(keptBytes("notice")).toBe(FAILURE_TEXT_MAX_BYTES);
    const b = new ReplyText(keptBytes("notice"));
    b.push("é".repeat(1500)); // 3000 bytes, 1500 units: room for more
    expect(b.open).toBe(true);
    b.push("é".repeat(1500));
    expect(b.open).toBe(false);
    expect(b.text()).toBe("é".repeat(1024));
  });
});
