/**
 * What a person reading a corpus transcript expects turnguard to report for its turns, kept
 * beside the transcript as SCENARIO.expect.json (re-recording never overwrites it). The top
 * level is the last turn's true Outcome; `earlier`, for a transcript of several prompts, the
 * true Outcomes of the turns before it, in order. `why` says what in the recording (the wire,
 * the agent's files, the mock's requests) supports the verdict.
 *
 * `blindSpot`, when set, says that turnguard cannot see this truth: nothing it reads holds it
 * (the wire, the agent's session files, its logs). It states what turnguard reports instead
 * and why; the replay then expects that report, so a change in it (turnguard learned to see
 * the truth, or reads something else) fails the replay until the file is updated.
 */
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { CategorySchema, StatusSchema } from "../../lib/core/outcome.ts";

/** The Outcome fields an expectation checks. */
const VerdictEntries = {
  status: StatusSchema,
  /** The error's category; null: `error` must be null. */
  category: v.nullable(CategorySchema),
  /** Whether a retry can help; null: no retry hint expected. */
  retryable: v.nullable(v.boolean()),
  /** A substring of `error.message` (case-insensitive). */
  message: v.optional(v.string()),
  /** A retry delay is stated on the wire: `retry.afterMs` or `retry.at` must be set. */
  delay: v.optional(v.boolean()),
};

/**
 * One turn's Outcome and why: the truth a person reads in the recording, or (as `blindSpot`)
 * what turnguard reports instead and why it cannot see the truth.
 */
export const VerdictSchema = v.strictObject({ ...VerdictEntries, why: v.string() });
export type Verdict = v.InferOutput<typeof VerdictSchema>;

/** One fixture's expectations. */
export const ExpectedSchema = v.strictObject({
  ...VerdictEntries,
  why: v.string(),
  blindSpot: v.optional(VerdictSchema),
  earlier: v.optional(v.array(VerdictSchema)),
});
export type Expected = v.InferOutput<typeof ExpectedSchema>;

/** Reads SCENARIO.expect.json; throws naming the file and the first problem. */
export function readExpected(path: string): Expected {
  const r = v.safeParse(ExpectedSchema, JSON.parse(readFileSync(path, "utf8")));
  if (!r.success) {
    const issue = r.issues[0];
    throw new Error(`${path}: ${v.getDotPath(issue) ?? "(root)"}: ${issue.message}`);
  }
  return r.output;
}
