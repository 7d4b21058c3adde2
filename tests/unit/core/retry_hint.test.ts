/** Retry hints read from a cause's text (lib/core/retry_hint.ts): durations and recovery times. */
import { describe, expect, test } from "bun:test";
import { parseDuration, parseRecovery } from "../../../lib/core/retry_hint.ts";
import { formatDuration } from "../../../lib/text/text.ts";

describe("retry hints", () => {
  const now = Date.parse("2026-06-01T00:00:00Z");
  const rows: Array<[string, number | null, string | null]> = [
    ["Individual quota reached. Resets in 40h52m46s.", (40 * 3600 + 52 * 60 + 46) * 1000, null],
    ["Encountered retryable api error. retrying in 1.481266493s.", 1481, null],
    ['"details":[{"retryDelay":"37s"}]', 37000, null],
    ["Retry-After: 120", 120000, null],
    [
      "You've reached your 5-hour standard usage limit (resets in 3h 21min)",
      (3 * 60 + 21) * 60000,
      null,
    ],
    [
      "You will regain access on 2026-06-02 at 00:00 UTC",
      86_400_000,
      "2026-06-02T00:00:00.000Z",
    ],
    [
      "You will regain access on 2026-06-01 at 9:30 UTC",
      9.5 * 3_600_000,
      "2026-06-01T09:30:00.000Z",
    ],
    ["Retry-After: Mon, 01 Jun 2026 00:02:00 GMT", 120000, "2026-06-01T00:02:00.000Z"],
    ["nothing to see here", null, null],
  ];
  for (const [text, afterMs, at] of rows) {
    test(text, () => {
      const hint = parseRecovery(text, now);
      expect(hint?.afterMs ?? null).toBe(afterMs);
      if (at) expect(hint?.at).toBe(at);
      if (afterMs !== null) expect(hint?.at).toBe(new Date(now + afterMs).toISOString());
    });
  }
  test("parseDuration and formatDuration", () => {
    expect(parseDuration("1h2m3s")).toBe(3723000);
    expect(parseDuration("nope")).toBeNull();
    expect(formatDuration(147166000)).toBe("40h52m");
    expect(formatDuration(72000)).toBe("1m12s");
    expect(formatDuration(1481)).toBe("1.5s");
    expect(formatDuration(300)).toBe("300ms");
  });
});
