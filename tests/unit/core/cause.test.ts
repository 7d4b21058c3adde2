/** The one builder of a Cause (lib/core/cause.ts): its defaults and what it keeps. */
import { describe, expect, test } from "bun:test";
import { buildCause } from "../../../lib/core/cause.ts";
import { retryHint } from "../../../lib/core/retry_hint.ts";

describe("buildCause", () => {
  test("defaults: no code, anchor or source; the category's retry hint; no wrapper flag", () => {
    expect(buildCause({ message: "Overloaded", category: "capacity" })).toEqual({
      error: {
        code: null,
        message: "Overloaded",
        category: "capacity",
        anchor: null,
        source: null,
      },
      retry: retryHint("capacity"),
    });
  });

  test("keeps what it is given", () => {
    const retry = retryHint("rate_limit", { afterMs: 1000, at: "2026-01-01T00:00:01.000Z" });
    const cause = buildCause({
      message: "Internal error",
      category: "rate_limit",
      code: 429,
      anchor: "records:qwen.chat",
      source: { path: "/s.jsonl", offset: 7 },
      retry,
      wrapper: true,
    });
    expect(cause).toEqual({
      error: {
        code: 429,
        message: "Internal error",
        category: "rate_limit",
        anchor: "records:qwen.chat",
        source: { path: "/s.jsonl", offset: 7 },
      },
      retry,
      wrapper: true,
    });
    expect("wrapper" in buildCause({ message: "x", category: "unknown", wrapper: false }))
      .toBe(false);
  });
});
