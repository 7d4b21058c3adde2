/**
 * `errorCause` (lib/cause/error_cause.ts): an agent's JSON-RPC error read into a Cause.
 */
import { describe, expect, test } from "bun:test";
import { errorCause } from "../../../lib/cause/error_cause.ts";
import { testClassifier as anchors } from "../../helpers/units.ts";

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
