/**
 * Explains the matcher's choice for one input: every anchor in the order the matcher tries
 * it, what each said, and why the winner won. For plugin authors (`turnguard explain`). The
 * order is the matcher's own (the classifier's candidates, tryMatch); each anchor runs once, and the winner
 * is taken from those runs by the matcher's rule (pickWinner), so a plugin's side effects
 * and budget are not spent twice.
 */
import { type Finding, tryMatch } from "./anchors.ts";
import type { Classifier } from "./classifier.ts";
import type { AnchorHit, AnchorInput, LoadedAnchor } from "../plugin/api.ts";
import { withPluginBudget } from "../plugin/budget.ts";

/** What one anchor did with the input. */
export interface Trial {
  /** The anchor tried (or not). */
  anchor: LoadedAnchor;
  /** 1-based place in the order the matcher tries anchors; null when not tried. */
  order: number | null;
  result: "matched" | "no match" | "failed" | "not tried";
  /** What it said when it matched. */
  hit: AnchorHit | null;
  /** The diagnostic of a failed anchor, or why one was not tried. */
  note: string | null;
}

/** The whole story of one input. */
export interface Explanation {
  /** The input explained. */
  input: AnchorInput;
  /** Every anchor: those tried, in the matcher's order, then those not tried. */
  trials: Trial[];
  /** The matcher's pick; null when nothing matched. */
  winner: Finding | null;
  /** One sentence: why the winner won, or why nothing did. */
  why: string;
  /** What went wrong in anchors (throws, invalid hits, budget). */
  diagnostics: string[];
}

/**
 * The finding the matcher picks among anchors' matches: the one whose anchor it tries first
 * (`ordered` is the classifier's candidates order), and among that anchor's matches the last input. It
 * equals findCause's answer over the same inputs, without running any anchor again: an
 * anchor tried earlier that matched an input would have been that input's finding.
 */
export function pickWinner(
  ordered: readonly LoadedAnchor[],
  findings: readonly Finding[],
): Finding | null {
  let best: Finding | null = null;
  let bestRank = Infinity;
  for (const f of findings) {
    const rank = ordered.indexOf(f.anchor);
    if (rank === -1 || rank > bestRank) continue;
    if (rank === bestRank && best !== null && f.index < best.index) continue;
    best = f;
    bestRank = rank;
  }
  return best;
}

/**
 * Tries every anchor on `input` once, under one plugin budget, and tells which one the
 * matcher picks, and why.
 */
export function explain(classifier: Classifier, input: AnchorInput): Explanation {
  return withPluginBudget(() => explainNow(classifier, input));
}

function explainNow(classifier: Classifier, input: AnchorInput): Explanation {
  const ordered = classifier.candidates([input.kind]);
  const diagnostics: string[] = [];
  const trials: Trial[] = ordered.map((anchor, i) => {
    const before = diagnostics.length;
    const hit = tryMatch(anchor, input, diagnostics);
    const failed = diagnostics.length > before;
    return {
      anchor,
      order: i + 1,
      result: hit ? "matched" : failed ? "failed" : "no match",
      hit,
      note: failed ? diagnostics[diagnostics.length - 1] : null,
    };
  });
  for (const anchor of classifier.anchors) {
    if (ordered.includes(anchor)) continue;
    trials.push({
      anchor,
      order: null,
      result: "not tried",
      hit: null,
      note: `reads ${anchor.on.join(", ")} inputs, not ${input.kind}`,
    });
  }
  const matches = trials.flatMap((t) => t.hit ? [{ anchor: t.anchor, hit: t.hit, index: 0 }] : []);
  const winner = pickWinner(ordered, matches);
  return { input, trials, winner, why: whyWon(trials, winner), diagnostics };
}

/** The sentence that says why `winner` won among the matching trials. */
export function whyWon(trials: readonly Trial[], winner: Finding | null): string {
  const matched = trials.filter((t) => t.result === "matched");
  if (winner === null) {
    const tried = trials.filter((t) => t.order !== null).length;
    return `no anchor matched (${tried} tried)`;
  }
  const id = winner.anchor.id;
  const priority = winner.anchor.priority;
  if (matched.length <= 1) return `${id} is the only anchor that matched`;
  const tied = matched.filter((t) => t.anchor !== winner.anchor && t.anchor.priority === priority);
  const parts = [
    `${id} has the highest priority (${priority}) of the ${matched.length} anchors that matched`,
  ];
  if (tied.length > 0) {
    const names = tied.map((t) => t.anchor.id).join(", ");
    parts.push(`${names} matched with the same priority but load later`);
  }
  return parts.join("; ");
}
