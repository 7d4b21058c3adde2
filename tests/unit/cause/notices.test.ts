/**
 * Agent notices (lib/cause/notices.ts) through decide: real notice-only turns fail, and
 * every answer of the corpus of model answers that discuss errors
 * (tests/fixtures/answers/, one file per answer as a model would stream it) stays `ok`
 * under every built-in profile's classifier — zero false alarms is the gate.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readNotices } from "../../../lib/cause/notices.ts";
import { buildClassifier, type Classifier } from "../../../lib/cause/classifier.ts";
import { compileNotices, parseConfigText } from "../../../lib/config/config.ts";
import { loadRegistry, profileClassifier } from "../../../lib/config/registry.ts";
import { decide, type TurnFacts } from "../../../lib/core/decide.ts";
import { ConfigError } from "../../../lib/errors.ts";

const ANSWERS = join(import.meta.dir, "..", "..", "fixtures", "answers");
const NOW = Date.parse("2026-03-01T12:00:00Z");

let classifiers: [string, Classifier][] = [];
beforeAll(async () => {
  const registry = await loadRegistry({ env: {}, cwd: "/" });
  classifiers = [...registry.profiles.values()].map((
    p,
  ) => [p.name, profileClassifier(registry, p)]);
});

/** The proxy's facts for an `end_turn` turn that streamed `text` and nothing else. */
function endTurn(text: string, classifier: Classifier): { facts: TurnFacts; text: string } {
  const reading = readNotices(text, classifier, NOW);
  return {
    facts: {
      cancelled: false,
      exit: null,
      stopReason: "end_turn",
      agentError: null,
      output: text.length,
      replyChars: text.length,
      logCause: null,
      timeout: null,
      notices: reading.facts,
    },
    text: reading.text,
  };
}

const claude = () => classifiers.find(([name]) => name === "claude")![1];

describe("the corpus of answers that discuss errors: every one stays ok", () => {
  const files = readdirSync(ANSWERS).filter((f) => !f.startsWith(".")).sort();
  test("the corpus holds at least 40 answers", () => {
    expect(files.length).toBeGreaterThanOrEqual(40);
  });
  for (const file of files) {
    test(file, () => {
      const text = readFileSync(join(ANSWERS, file), "utf8");
      expect(classifiers.length).toBeGreaterThan(0);
      for (const [name, classifier] of classifiers) {
        const d = decide(endTurn(text, classifier).facts);
        expect({ profile: name, status: d.status, error: d.error?.message ?? null })
          .toEqual({ profile: name, status: "ok", error: null });
      }
    });
  }
});

describe("an agent's notices alone: the turn failed", () => {
  // Each: the streamed text, as the agent streams it -> status, category.
  const rows: Array<[string, string, string, string]> = [
    [
      "pi-acp's retry banners then a failure line (chunks with no line breaks)",
      "Retrying (attempt 1/2, waiting 1s)...Retrying (attempt 2/2, waiting 2s)...Error: 429 Too Many Requests",
      "failed",
      "rate_limit",
    ],
    [
      "Claude Code's API error alone",
      'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
      "failed",
      "capacity",
    ],
    [
      "pi's give-up line",
      "Retrying (1/3) in 2s...\nRetrying (2/3) in 4s...\nRetry failed after 3 attempts: 429 rate limit exceeded",
      "failed",
      "rate_limit",
    ],
    [
      "retried N times, last error",
      "Request failed: retried 3 times. Last error: 401 Unauthorized: invalid x-api-key",
      "failed",
      "auth",
    ],
    [
      "codex's banner then an API error on its own line",
      "stream disconnected - retrying sampling request (1/5 in 200ms)...\nAPI Error: 503 Service Unavailable",
      "failed",
      "capacity",
    ],
    [
      "model text, then the agent retried and gave up: the reply was cut",
      "The answer is 4 because two plus Retrying (attempt 1/2, waiting 1s)...\nError: 529 overloaded_error",
      "truncated",
      "capacity",
    ],
  ];
  for (const [name, text, status, category] of rows) {
    test(name, () => {
      const d = decide(endTurn(text, claude()).facts);
      expect([d.status, d.error?.category, d.swallowed] as unknown[]).toEqual([
        status,
        category,
        true,
      ]);
    });
  }
  test("retry banners then nothing: no answer (empty), said in a note", () => {
    const d = decide(
      endTurn(
        "Retrying (attempt 1/2, waiting 1s)...Retrying (attempt 2/2, waiting 2s)...",
        claude(),
      )
        .facts,
    );
    expect([d.status, d.notes]).toEqual([
      "empty",
      ["the agent streamed only its own notices (2), no answer"],
    ]);
  });
  test("a retry that recovered: the answer after the banner stands", () => {
    const text = "Retrying (attempt 1/2, waiting 1s)...Retry finished, resuming.The answer is 4.";
    expect(decide(endTurn(text, claude()).facts).status).toBe("ok");
  });
  test("the failure's retry time is read from its words", () => {
    const text =
      "Retrying (attempt 1/2, waiting 1s)...\nError: 503 The model is overloaded. Please retry in 30s.";
    const d = decide(endTurn(text, claude()).facts);
    expect([d.status, d.retry?.retryable, d.retry?.afterMs]).toEqual(["failed", true, 30_000]);
  });
  test("a failure line whose words carry no provider signature is no notice", () => {
    const reading = readNotices("Error: something odd", claude(), NOW);
    expect(reading.facts).toBeNull();
  });
  test("inside a fenced block nothing is a notice", () => {
    const reading = readNotices("```\nRetrying (attempt 1/2, waiting 1s)...\n```", claude(), NOW);
    expect(reading.facts).toBeNull();
  });
});

describe("a profile's declared notices", () => {
  const declared = (entries: Parameters<typeof compileNotices>[0]) =>
    buildClassifier(claude().anchors, compileNotices(entries));
  test("are removed from reply.text; the model's answer stands", () => {
    const c = declared(["Queued message (position 1).", {
      regex: "Starting queued message\\. \\(\\d+ remaining\\)",
    }]);
    const text =
      "Queued message (position 1).\nStarting queued message. (0 remaining)The answer is 4.";
    const { facts, text: reply } = endTurn(text, c);
    expect(reply).toBe("The answer is 4.");
    expect(decide(facts).status).toBe("ok");
  });
  test("one that carries a failure and ends the text fails the turn, after model text too", () => {
    const c = declared([{ regex: "\\[qwen\\] request failed: [^\\n]*", ignore_case: false }]);
    const text = "Let me check the file.\n[qwen] request failed: 429 insufficient_quota";
    const { facts, text: reply } = endTurn(text, c);
    const d = decide(facts);
    expect([d.status, d.error?.category, reply]).toEqual([
      "truncated",
      "quota",
      "Let me check the file.\n",
    ]);
  });
  test("a literal is matched as written, not as a regex", () => {
    const c = declared(["Retrying (x)..."]);
    expect(readNotices("Retrying (x)...", c, NOW).text).toBe("");
    expect(readNotices("Retrying x...", c, NOW).text).toBe("Retrying x...");
  });
});

describe("notices in the config: validated with file, line and key", () => {
  const parse = (toml: string) => parseConfigText("/u/turnguard.toml", toml);
  const error = (toml: string) => {
    try {
      parse(toml);
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    return null;
  };
  test("literals and linear regexes load", () => {
    const f = parse('[agent.pi]\nnotices = ["Retrying...", { regex = "^Queued message" }]\n');
    expect(f.data.agent?.pi.notices).toHaveLength(2);
  });
  test("a regex that is not linear, or not a regex, or an empty literal: one line each", () => {
    expect(error('[agent.pi]\nnotices = [\n  { regex = "(a+)+$" },\n]\n')).toMatch(
      /^\/u\/turnguard\.toml:2: agent\.pi\.notices\[0\]\.regex: .*linear/,
    );
    expect(error('[agent.pi]\nnotices = [{ regex = "(a)\\\\1" }]\n')).toMatch(/linear/);
    expect(error('[agent.pi]\nnotices = [{ regex = "(" }]\n')).toMatch(
      /notices\[0\]\.regex: is not a valid regular expression/,
    );
    expect(error('[agent.pi]\nnotices = [""]\n')).toMatch(/notices\[0\]/);
    expect(error("[agent.pi]\nnotices = [3]\n")).toMatch(/a notice is a string/);
  });
});
