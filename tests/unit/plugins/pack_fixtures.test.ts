/**
 * Every case of every built-in pack, from tests/fixtures/packs/<pack>.json: the real wording
 * (each case cites where it came from), the anchor that must win among all built-in and
 * embedded anchors of the agent's profile, the readable cause, category, code and retry hint.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { findCause } from "../../../lib/cause/anchors.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { classify } from "../../../lib/cause/classify.ts";
import { embeddedConfig, mergeConfigs } from "../../../lib/config/config.ts";
import { AnchorInputSchema, AnchorSchema } from "../../../lib/plugin/api.ts";
import { builtinPlugins, merge } from "../../../lib/config/packs.ts";
import { profileAnchors } from "../../../lib/config/registry.ts";
import { ROOT } from "../../helpers/cli.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const DIR = join(ROOT, "tests", "fixtures", "packs");

const CaseSchema = v.strictObject({
  name: v.string(),
  source: v.pipe(v.string(), v.minLength(5)),
  agent: v.optional(v.string()),
  /** The clock of this case, when its reset time is absolute (default NOW). */
  now: v.optional(v.pipe(v.string(), v.isoTimestamp())),
  input: AnchorInputSchema(),
  expect: v.strictObject({
    anchor: v.string(),
    category: v.string(),
    cause: v.string(),
    code: v.nullable(v.union([v.number(), v.string()])),
    afterMs: v.optional(v.nullable(v.number())),
    at: v.optional(v.string()),
    retryable: v.boolean(),
  }),
});

const config = mergeConfigs([embeddedConfig()]);
const all = merge([
  builtinPlugins(),
  { anchors: config.declarativeAnchors.map((a) => v.parse(AnchorSchema(), a)), detectors: [] },
]).anchors;
const adHoc = { name: "other", match: [], logs: [], logFormat: "plain" as const, anchors: null };

const packs = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();

test("there is a fixture file for every built-in pack", () => {
  expect(packs).toEqual([
    "agy.json",
    "claude.json",
    "codex.json",
    "gemini.json",
    "generic.json",
    "opencode.json",
    "qwen.json",
  ]);
});

for (const file of packs) {
  const cases = v.parse(v.array(CaseSchema), JSON.parse(readFileSync(join(DIR, file), "utf8")));
  describe(`pack ${file.replace(/\.json$/, "")}`, () => {
    for (const c of cases) {
      test(c.name, () => {
        const profile = c.agent ? config.profiles.get(c.agent)! : adHoc;
        expect(profile).toBeDefined();
        const classifier = buildClassifier(profileAnchors(all, profile));
        const { finding, diagnostics } = findCause(classifier, [c.input]);
        expect(diagnostics).toEqual([]);
        expect(finding?.anchor.id).toBe(c.expect.anchor);
        expect(finding!.hit.cause).toBe(c.expect.cause);
        const now = c.now ? Date.parse(c.now) : NOW;
        const { category, retry } = classify(finding!.hit.cause, finding!.hit, classifier, now);
        expect(category).toBe(c.expect.category as typeof category);
        expect(finding!.hit.code ?? null).toBe(c.expect.code);
        if (c.expect.at !== undefined) expect(retry.at).toBe(c.expect.at);
        else expect(retry.afterMs).toBe(c.expect.afterMs ?? null);
        expect(retry.retryable).toBe(c.expect.retryable);
      });
    }
  });
}
