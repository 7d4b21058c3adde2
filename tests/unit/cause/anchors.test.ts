import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import {
  compileAnchor,
  DeclarativeAnchorSchema,
  findCause,
  REGEX_HEAD_CHARS,
} from "../../../lib/cause/anchors.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { classify } from "../../../lib/cause/classify.ts";
import { embeddedConfig, mergeConfigs, parseConfigText } from "../../../lib/config/config.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { AnchorSchema, type LoadedAnchor } from "../../../lib/plugin/api.ts";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { utf8Length } from "../../../lib/text/text.ts";

const decl = (o: Record<string, unknown>): LoadedAnchor =>
  v.parse(AnchorSchema(), compileAnchor(v.parse(DeclarativeAnchorSchema(), o)));

const agy = mergeConfigs([embeddedConfig()]).declarativeAnchors.map((a) =>
  v.parse(AnchorSchema(), a)
);
const log = (...lines: string[]) => lines.map((line) => ({ kind: "log" as const, line }));
const Q =
  "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Please upgrade your subscription to increase your limits. Resets in 40h52m46s";

describe("agy anchors (embedded anchors.toml)", () => {
  test("the quota line is de-wrapped and starts at the most specific anchor", () => {
    const line =
      `E0707 08:34:23.910604  84 log.go:398] agent executor error: model unreachable: ${Q}.: model unreachable: ${Q}.`;
    const { finding } = findCause(buildClassifier(agy), log("I0707 starting", line));
    expect(finding?.anchor.id).toBe("agy.executor");
    expect(finding?.hit.cause).toBe(`agent executor error: model unreachable: ${Q}.`);
    expect(finding?.hit.cause).not.toContain(".: ");
  });
  test("most specific anchor wins even when a less specific one matches later", () => {
    const { finding } = findCause(
      buildClassifier(agy),
      log(`E0 agent executor error: model unreachable: ${Q}.`, `W0 retrying: ${Q}`),
    );
    expect(finding?.anchor.id).toBe("agy.executor");
    expect(finding?.index).toBe(0);
  });
  test("the last matching line of the same anchor wins", () => {
    const { finding } = findCause(
      buildClassifier(agy),
      log("RESOURCE_EXHAUSTED first", "x", "RESOURCE_EXHAUSTED last"),
    );
    expect(finding?.hit.cause).toBe("RESOURCE_EXHAUSTED last");
    expect(finding?.index).toBe(2);
  });
  test("a clean log has no cause", () => {
    expect(findCause(buildClassifier(agy), log("I0707 starting", "I0707 done")).finding).toBeNull();
  });
  test("classify gives quota and the reset as retry hint", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    const generic = builtinPlugins().anchors;
    const c = classify(
      `agent executor error: model unreachable: ${Q}.`,
      undefined,
      buildClassifier(generic),
      now,
    );
    expect(c.category).toBe("quota");
    expect(c.retry).toEqual({
      retryable: true,
      reason: "quota: retry in 40h52m",
      afterMs: 147166000,
      at: "2026-01-02T16:52:46.000Z",
    });
  });
});

describe("declarative anchors", () => {
  test("regex with a named cause group, category and code", () => {
    const a = decl({
      id: "x.err",
      regex: "ERROR: (?<cause>overloaded.*)$",
      category: "capacity",
      code: 529,
      on: ["log"],
    });
    const { finding } = findCause(buildClassifier([a]), log("ERROR: overloaded right now"));
    expect(finding?.hit).toEqual({
      cause: "overloaded right now",
      category: "capacity",
      code: 529,
    });
  });
  test("ignore_case literal; cause capped at 500 bytes on a character boundary", () => {
    const a = decl({ id: "x.lit", literal: "boom:", ignore_case: true });
    const { finding } = findCause(buildClassifier([a]), log("BOOM: " + "é".repeat(400)));
    expect(finding?.hit.cause.startsWith("BOOM: é")).toBe(true);
    expect(utf8Length(finding!.hit.cause)).toBeLessThanOrEqual(500);
  });
  test(
    "a user's backtracking regex runs on a bounded head: long agent text cannot stall it",
    () => {
      // `.* failed$` is what a user writes; on 256k spaces it backtracks quadratically
      // (about a minute on the whole classified head).
      const a = decl({ id: "x.slow", regex: "(?<cause>.*) failed$", category: "crash" });
      const spaces = " ".repeat(256 * 1024);
      const start = performance.now();
      for (const input of [...log(spaces), { kind: "text" as const, text: spaces }]) {
        expect(findCause(buildClassifier([a]), [input]).finding).toBeNull();
      }
      // Generous: a bounded head takes milliseconds; the whole text, close to a minute.
      expect(performance.now() - start).toBeLessThan(4_000);
      // A cause in the head still matches, whatever follows it.
      const hit = findCause(buildClassifier([a]), log("worker failed")).finding?.hit;
      expect(hit?.cause).toBe("worker");
      // Past the head, a regex finds nothing (a literal anchor still sees the whole head).
      expect(findCause(buildClassifier([a]), log("x".repeat(REGEX_HEAD_CHARS) + " failed")).finding)
        .toBeNull();
    },
    120_000,
  );
  test("exactly one of literal or regex; invalid regex rejected", () => {
    expect(v.safeParse(DeclarativeAnchorSchema(), { id: "a" }).success).toBe(false);
    expect(v.safeParse(DeclarativeAnchorSchema(), { id: "a", literal: "x", regex: "y" }).success)
      .toBe(false);
    expect(v.safeParse(DeclarativeAnchorSchema(), { id: "a", regex: "(" }).success).toBe(false);
  });
  test("an anchor that looks nowhere (`on = []`) is a config error naming file, line and key", () => {
    let error: unknown;
    try {
      parseConfigText("/u/a.toml", '[[anchor]]\nid = "a"\nliteral = "x"\non = []\n');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      "/u/a.toml:4: anchor[0].on: name at least one of log, error, text",
    );
  });
  test("a throwing anchor becomes a diagnostic and the others still run", () => {
    const bad = v.parse(AnchorSchema(), {
      id: "bad",
      priority: 99,
      on: ["log"],
      match: () => {
        throw new Error("kaput");
      },
    });
    const good = decl({ id: "good", literal: "fail" });
    const r = findCause(buildClassifier([bad, good]), log("it did fail"));
    expect(r.finding?.anchor.id).toBe("good");
    expect(r.diagnostics).toEqual(["anchor bad threw: kaput"]);
  });
});
