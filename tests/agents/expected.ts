/**
 * What a person reading a corpus transcript expects turnguard to report for its turn, kept
 * beside the transcript as SCENARIO.expect.json (re-recording never overwrites it). `why` says
 * what on the wire supports the verdict. `undecidable`, when set, says why the truth is not on
 * the wire (only in the agent's files): the expectation then states what the wire alone shows,
 * and the case belongs to the session-file evidence work.
 */
import { readFileSync } from "node:fs";
import * as v from "valibot";
import { CategorySchema, StatusSchema } from "../../lib/core/outcome.ts";

/** One fixture's expected Outcome. */
export const ExpectedSchema = v.strictObject({
  status: StatusSchema,
  /** The error's category; null: `error` must be null. */
  category: v.nullable(CategorySchema),
  /** Whether a retry can help; null: no retry hint expected. */
  retryable: v.nullable(v.boolean()),
  /** A substring of `error.message` (case-insensitive). */
  message: v.optional(v.string()),
  /** A retry delay is stated on the wire: `retry.afterMs` or `retry.at` must be set. */
  delay: v.optional(v.boolean()),
  why: v.string(),
  undecidable: v.optional(v.string()),
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
