import { describe, expect, test } from "bun:test";
import { clientLineDue } from "../../../lib/cli/replay.ts";

describe("clientLineDue: when the replay sends the next recorded client line", () => {
  // recordedTimes, received, expected, pending, elapsed ms, recorded gap ms → send now?
  const rows: [string, boolean, number, number, number, number, number, boolean][] = [
    ["unpaced: once the agent lines before it arrived", false, 3, 3, 1, 0, 60_000, true],
    ["unpaced: not before", false, 2, 3, 0, 0, 0, false],
    ["paced, nothing unanswered: at once", true, 2, 3, 0, 0, 60_000, true],
    [
      "paced, a prompt unanswered: a cancel waits for its recorded time",
      true,
      3,
      3,
      1,
      5000,
      60_000,
      false,
    ],
    ["paced, the recorded time has come", true, 3, 3, 1, 60_000, 60_000, true],
    [
      "paced, the time came but the agent lines before it did not",
      true,
      2,
      3,
      1,
      90_000,
      60_000,
      false,
    ],
  ];
  for (
    const [name, recordedTimes, received, expected, pending, elapsedMs, recordedGapMs, want] of rows
  ) {
    test(name, () =>
      expect(
        clientLineDue({ recordedTimes, received, expected, pending, elapsedMs, recordedGapMs }),
      ).toBe(want));
  }
});
