/**
 * The classifier of one agent profile: its anchors put in the matcher's order once for every
 * mix of input kinds, so that finding and classifying a turn's causes never filter or sort
 * them again. Built once where the profile is resolved (lib/config/registry.ts
 * `profileClassifier`) and passed down to everything that reads a cause.
 */
import type { AnchorInputKind, LoadedAnchor } from "../plugin/api.ts";

/** A profile's anchors, ordered for the matcher. */
export interface Classifier {
  /** The anchors, in load order. */
  readonly anchors: readonly LoadedAnchor[];
  /** The anchors that read `text` inputs, in the matcher's order: they classify causes. */
  readonly text: readonly LoadedAnchor[];
  /**
   * The anchors that read any of `kinds`, highest priority first, load order among equal
   * priorities: the order in which the matcher tries them.
   */
  candidates(kinds: Iterable<AnchorInputKind>): readonly LoadedAnchor[];
  /**
   * The profile's own notice patterns (`notices`, sticky and multiline): text its agent
   * streams that the model never wrote (lib/cause/notices.ts).
   */
  readonly notices?: readonly RegExp[];
}

const BIT: Record<AnchorInputKind, number> = { log: 1, error: 2, text: 4 };

/** Orders `anchors` once for each mix of input kinds (7 lists of a few dozen anchors). */
export function buildClassifier(
  anchors: readonly LoadedAnchor[],
  notices: readonly RegExp[] = [],
): Classifier {
  const ranked = anchors
    .map((anchor, order) => ({ anchor, order }))
    .sort((a, b) => b.anchor.priority - a.anchor.priority || a.order - b.order)
    .map(({ anchor }) => anchor);
  const byMask: (readonly LoadedAnchor[])[] = [];
  for (let mask = 0; mask < 8; mask++) {
    byMask.push(Object.freeze(ranked.filter((a) => a.on.some((kind) => (BIT[kind] & mask) !== 0))));
  }
  return {
    notices: Object.freeze([...notices]),
    anchors: Object.freeze([...anchors]),
    text: byMask[BIT.text],
    candidates(kinds) {
      let mask = 0;
      for (const kind of kinds) mask |= BIT[kind];
      return byMask[mask];
    },
  };
}
