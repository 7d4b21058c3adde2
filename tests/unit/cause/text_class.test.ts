/**
 * `context.classify` (lib/cause/text_class.ts `classifyText`): the category the provider
 * vocabulary gives a text, and the retry time its words state.
 */
import { describe, expect, test } from "bun:test";
import { classifyText, PLUGIN_CONTEXT } from "../../../lib/cause/text_class.ts";

const NOW = Date.parse("2026-03-02T10:00:00.000Z");

describe("classifyText", () => {
  test("a provider's code outranks the words of the status that carries it", () => {
    const body = '{"error":{"message":"Rate limited","code":"insufficient_quota"}}';
    expect(classifyText(`429 ${body}`, NOW)).toEqual({ category: "quota" });
    expect(classifyText("429 Rate limit exceeded. Try again later.", NOW).category)
      .toBe("rate_limit");
  });

  test("the words' retry time, relative to now", () => {
    expect(classifyText("Rate limit reached. Please retry in 30s.", NOW)).toEqual({
      category: "rate_limit",
      afterMs: 30_000,
      at: "2026-03-02T10:00:30.000Z",
    });
  });

  test("words that name no failure are unknown", () => {
    expect(classifyText("Here is the refactored function.", NOW)).toEqual({ category: "unknown" });
  });

  test("the in-process context answers with the same function", () => {
    expect(PLUGIN_CONTEXT.classify("503 Service Unavailable").category)
      .toBe(classifyText("503 Service Unavailable").category);
  });
});
