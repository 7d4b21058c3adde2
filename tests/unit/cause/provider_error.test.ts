/**
 * Readable messages out of provider errors (lib/cause/error_cause.ts helpers).
 */
import { describe, expect, test } from "bun:test";
import {
  echoesInput,
  errorInput,
  looksLikeJson,
  providerMessage,
  readableMessage,
} from "../../../lib/cause/error_cause.ts";

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
