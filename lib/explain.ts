/**
 * Explains the matcher's choice for one input: every anchor in the order the matcher tries
 * it, what each said, and why the winner won. For plugin authors (`turnguard explain`). The
 * order and the winner are the matcher's own (anchorsFor, findCause), never a copy.
 */
import { anchorsFor, findCause, type Finding, tryMatch } from "./anchors.ts";
import type { AnchorHit, AnchorInput, LoadedAnchor } from "./plugin.ts";

/** What one anchor did with the input. */
export interface Trial {
  anchor: LoadedAnchor;
  /** 1-based place in the order the matcher tries anchors; null when not tried. */
  order: number | null;
  result: "matched" | "no match" | "failed" | "not tried";
  hit: AnchorHit | null;
  /** The diagnostic of a failed anchor, or why one was not tried. */
  note: string | null;
}

/** The whole story of one input. */
export interface Explanation {
  input: AnchorInput;
  trials: Trial[];
  winner: Finding | null;
  /** One sentence: why the winner won, or why nothing did. */
  why: string;
  diagnostics: string[];
}

/** Tries every anchor on `input` and tells which one the matcher picks, and why. */
export function explain(anchors: readonly LoadedAnchor[], input: AnchorInput): Explanation {
  const ordered = anchorsFor(anchors, new Set([input.kind]));
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
  for (const anchor of anchors) {
    if (ordered.includes(anchor)) continue;
    trials.push({
      anchor,
      order: null,
      result: "not tried",
      hit: null,
      note: `reads ${anchor.on.join(", ")} inputs, not ${input.kind}`,
    });
  }
  const { finding } = findCause(anchors, [input]);
  return { input, trials, winner: finding, why: whyWon(trials, finding), diagnostics };
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
