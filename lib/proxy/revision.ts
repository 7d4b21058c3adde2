/**
 * A turn's revised Outcome: when the session records' end landed after `records_wait_ms`
 * (docs/EVIDENCE.md "The turn's end"), the turn is concluded again from them; this says
 * whether that reads differently from the Outcome the client was answered by, and gives
 * the revision the journal records (`turn_revised`). Pure.
 */
import type { Outcome } from "../core/outcome.ts";

/** What of an Outcome a revision is about: its verdict, not its diagnostics or timings. */
function verdictOf(o: Outcome): string {
  return JSON.stringify([
    o.status,
    o.stopReason,
    o.error?.category ?? null,
    o.error?.message ?? null,
    o.retry?.retryable ?? null,
    o.reply.text ?? null,
    o.reply.chars,
    o.reply.recovered ?? null,
  ]);
}

/**
 * Revision `revision` of the turn's Outcome, or null when the late records read as the first
 * did. The revision keeps the first Outcome's publish (it happened), and says when its
 * records landed.
 */
export function revisedOutcome(
  first: Outcome,
  again: Outcome,
  lateMs: number,
  revision = 1,
): Outcome | null {
  if (verdictOf(first) === verdictOf(again)) return null;
  return {
    ...again,
    revision,
    publish: first.publish,
    diagnostics: [
      ...again.diagnostics.filter((d) => !d.startsWith("the session records did not show")),
      `revised: the session records showed the turn's end ${lateMs} ms after records_wait_ms; ` +
      `the turn was first recorded ${first.status}${
        first.error ? ` (${first.error.category})` : ""
      }`,
    ],
  };
}
