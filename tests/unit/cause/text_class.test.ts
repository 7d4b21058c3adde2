/**
 * `context.classify` (lib/cause/text_class.ts `classifyText`): the category the provider
 * vocabulary gives a text, and the retry time its words state.
 */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { classifyText, PLUGIN_CONTEXT } from "../../../lib/cause/text_class.ts";
import { classify } from "../../../lib/cause/classify.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { AnchorSchema } from "../../../lib/plugin/api.ts";
import genericPack from "../../../plugins/generic.ts";

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

describe("classifyText is the classifier of a profile with the generic pack alone", () => {
  const generic = buildClassifier(
    (genericPack.anchors ?? []).map((a) => v.parse(AnchorSchema(), a)),
  );
  // Wordings of every tier: a provider's JSON, its words, the generic rules' words and
  // codes, a bare status, a wrapper's words, and an answer that names no failure.
  const texts = [
    '{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded for metric: x, limit: 0"}}',
    '429 {"error":{"message":"Rate limited","code":"insufficient_quota"}}',
    "You have hit your monthly spend limit",
    "Request timed out.",
    "connect ECONNREFUSED 127.0.0.1:443",
    "HTTP 503",
    "API Error: 529 Overloaded",
    "Model stream ended without a finish reason.",
    "The model `gpt-9` does not exist or you do not have access to it.",
    "Prompt is too long: 210000 tokens > 200000 maximum",
    "Internal error",
    "Here is the refactored function.",
  ];
  for (const text of texts) {
    test(text, () => {
      expect(classifyText(text, NOW).category)
        .toBe(classify(text, undefined, generic, NOW).category);
    });
  }
});
