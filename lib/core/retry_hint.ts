/**
 * Retry hints: the one builder of a failure's RetryHint (`retryHint`: retryable or not, why,
 * and when), and the reading of "when does it recover" out of an error text, in the
 * wordings agents really use: `Resets in 40h52m46s`, `retry in 1.48s`, `retryDelay: "37s"`,
 * `Retry-After: 120`, `You will regain access on 2026-01-01 at 00:00 UTC`,
 * `resets in 3h 21min`. Pure: the caller passes the clock.
 */
import type { Category, RetryHint } from "./outcome.ts";
import { formatDuration } from "../text/text.ts";

/**
 * Categories a later attempt can fix by itself (quota only once it has reset). A timeout
 * is not among them: a turn that went silent may have done work, so repeating it is the
 * operator's call, not an automatic one.
 */
export const RETRYABLE: ReadonlySet<Category> = new Set([
  "quota",
  "rate_limit",
  "capacity",
  "network",
]);

/** Whether a failure may be retried: a retryable category, and a quota only with a reset time. */
export function isRetryable(category: Category, afterMs: number | null): boolean {
  return RETRYABLE.has(category) && (category !== "quota" || afterMs !== null);
}

/** A short human reason for a retry hint: `quota resets in 40h52m`, `auth: not retryable`. */
export function retryReason(category: Category, afterMs: number | null): string {
  if (!RETRYABLE.has(category)) return `${category}: not retryable`;
  if (afterMs === null) {
    return category === "quota" ? "quota: no reset time given" : `${category}: retry with backoff`;
  }
  return `${category}: retry in ${formatDuration(afterMs)}`;
}

/** When a failure recovers, as far as is known: a delay and the time it ends. */
export interface RecoveryTime {
  afterMs: number | null;
  at: string | null;
}

const UNKNOWN_TIME: RecoveryTime = { afterMs: null, at: null };

/**
 * The one builder of a RetryHint: whether a failure of `category` may be retried, and why,
 * given when it recovers (unknown by default). Every hint an Outcome carries is built here.
 */
export function retryHint(category: Category, when: RecoveryTime = UNKNOWN_TIME): RetryHint {
  return {
    retryable: isRetryable(category, when.afterMs),
    reason: retryReason(category, when.afterMs),
    afterMs: when.afterMs,
    at: when.at,
  };
}

/** A recovery time found in a text: a delay, an absolute time, or both. */
export interface RecoveryHint {
  afterMs: number | null;
  at: string | null;
  reason: string;
}

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

const UNIT = String.raw`(?:ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)(?![a-z])`;
const DURATION = String.raw`(?:\d+(?:\.\d+)?\s*${UNIT}\s*)+`;
// No match starts inside a run of digits (it would fail as the run's own start did): linear.
const PART = new RegExp(String.raw`(?<!\d)(\d+(?:\.\d+)?)\s*(${UNIT})`, "gi");

/** Whether `ms` since the epoch is a time a Date can hold (else toISOString throws). */
function validTime(ms: number): boolean {
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15;
}

/** Parses `40h52m46s`, `1.48s`, `3h 21min`, `37s` into milliseconds; null when not a duration. */
export function parseDuration(text: string): number | null {
  let total = 0;
  let found = false;
  for (const m of text.matchAll(PART)) {
    total += parseFloat(m[1]) * UNIT_MS[m[2].toLowerCase()];
    found = true;
  }
  return found ? Math.round(total) : null;
}

const RELATIVE: { re: RegExp; reason: string }[] = [
  { re: new RegExp(String.raw`\bresets?\s+in\s+(${DURATION})`, "i"), reason: "resets" },
  {
    re: new RegExp(String.raw`\bretry(?:ing)?\s+(?:again\s+)?(?:in|after)\s+(${DURATION})`, "i"),
    reason: "retry",
  },
  {
    re: new RegExp(String.raw`\bretryDelay\\?"?\s*[:=]\s*\\?"?(${DURATION})`, "i"),
    reason: "retry",
  },
  { re: /\bretry-after\\?"?\s*[:=]\s*\\?"?(\d+(?:\.\d+)?)\b(?!\s*[a-z])/i, reason: "retry" },
  { re: new RegExp(String.raw`\btry again in\s+(${DURATION})`, "i"), reason: "retry" },
];

const MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec";

/** Absolute wordings: "regain access on 2026-01-01 at 00:00 UTC", "resets at 2026-...Z". */
function parseAbsolute(text: string): string | null {
  const iso = text.match(
    /\b(?:regain access|resets?|reset|available again|try again)\s+(?:on|at|after)\s+(\d{4}-\d{2}-\d{2})(?:\s*(?:at|T)\s*(\d{1,2}:\d{2}(?::\d{2})?))?\s*(UTC|Z|GMT)?/i,
  );
  if (iso) {
    const [h, m, sec = "00"] = (iso[2] ?? "00:00").split(":");
    const t = Date.parse(`${iso[1]}T${h.padStart(2, "0")}:${m}:${sec}Z`);
    if (validTime(t)) return new Date(t).toISOString();
  }
  const named = text.match(
    new RegExp(
      String
        .raw`\b(?:regain access|resets?)\s+(?:on|at)\s+((?:${MONTHS})[a-z]*\.?\s+\d{1,2},?\s+\d{4}(?:\s+(?:at\s+)?\d{1,2}:\d{2}\s*(?:am|pm)?)?)\s*(UTC|GMT)?`,
      "i",
    ),
  );
  if (named) {
    const t = Date.parse(`${named[1].replace(/\bat\b/i, "")} UTC`);
    if (validTime(t)) return new Date(t).toISOString();
  }
  return null;
}

/**
 * Finds the recovery hint in `text`, relative to `now` (ms since epoch). Relative delays
 * also get an absolute `at`; absolute times also get `afterMs` (never negative).
 */
export function parseRecovery(text: string, now: number): RecoveryHint | null {
  for (const { re, reason } of RELATIVE) {
    const m = text.match(re);
    if (!m) continue;
    const ms = /^\d+(?:\.\d+)?$/.test(m[1].trim())
      ? Math.round(parseFloat(m[1]) * 1000)
      : parseDuration(m[1]);
    // A delay past what a date can hold (`retry-after: 1e400`) is no hint.
    if (ms === null || !validTime(now + ms)) continue;
    return { afterMs: ms, at: new Date(now + ms).toISOString(), reason };
  }
  const httpDate = text.match(
    /\bretry-after\\?"?\s*[:=]\s*\\?"?((?:mon|tue|wed|thu|fri|sat|sun), \d{1,2} [a-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT)/i,
  );
  const parsed = httpDate ? Date.parse(httpDate[1]) : NaN;
  const at = validTime(parsed) ? new Date(parsed).toISOString() : parseAbsolute(text);
  if (at) return { afterMs: Math.max(0, Date.parse(at) - now), at, reason: "regain access" };
  return null;
}
