/**
 * The pieces of a revised Outcome and a recovered reply that are plain functions: whether a
 * turn concluded again from late records reads differently (`revisedOutcome`), whether the
 * client did not receive the recorded answer (`unsent`), and what it still lacks of it
 * (`recoveredRest`).
 */
import { describe, expect, test } from "bun:test";
import { revisedOutcome } from "../../../lib/proxy/revision.ts";
import { recoveredRest, unsent } from "../../../lib/proxy/beyond_wire.ts";
import { capacityError, testOutcome } from "../../helpers/outcome.ts";

const ANSWER = "The answer is 4: two plus two makes four.";

describe("revisedOutcome", () => {
  const first = testOutcome("truncated", "The answer i", {
    error: capacityError("API Error: 529 Overloaded"),
    diagnostics: ["the session records did not show the turn's end within records_wait_ms"],
  });

  test("the same verdict from the late records: no revision", () => {
    const again = { ...first, diagnostics: ["other words"], durationMs: first.durationMs + 1 };
    expect(revisedOutcome(first, again, 250)).toBeNull();
  });

  test("another verdict: the revision, saying what the turn was first recorded as", () => {
    const again = testOutcome("ok", "The answer i");
    const revised = revisedOutcome(first, again, 250)!;
    expect(revised.status).toBe("ok");
    expect(revised.error).toBeNull();
    expect(revised.diagnostics.at(-1)).toContain("first recorded truncated (capacity)");
    expect(revised.diagnostics.join("\n")).not.toContain("did not show the turn's end");
    // Its number, which the outcome file's line carries (the first Outcome has none).
    expect(revised.revision).toBe(1);
    expect(first.revision).toBeUndefined();
    expect(revisedOutcome(first, again, 250, 2)!.revision).toBe(2);
  });

  test("a different recovered reply is a revision too", () => {
    const again = {
      ...first,
      reply: { ...first.reply, recovered: ANSWER },
    };
    expect(revisedOutcome(first, again, 10)).not.toBeNull();
  });
});

describe("unsent and recoveredRest", () => {
  const rows: [string, string, boolean, string][] = [
    ["nothing streamed", "", true, ANSWER],
    ["white space streamed", "\n", true, ANSWER],
    ["a strict beginning", "The answer i", true, "s 4: two plus two makes four."],
    ["all of it", ANSWER, false, ""],
    ["all of it, and a newline the record lacks", ANSWER + "\n", false, ""],
    ["another text", "Something else.", false, ANSWER],
  ];
  for (const [name, streamed, lost, rest] of rows) {
    test(name, () => {
      expect(unsent(streamed, ANSWER)).toBe(lost);
      if (lost) expect(recoveredRest(streamed, ANSWER)).toBe(rest);
    });
  }

  test("an empty recorded answer is nothing to recover", () => {
    expect(unsent("", "  ")).toBe(false);
  });
});
