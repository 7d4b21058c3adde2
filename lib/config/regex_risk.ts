/**
 * Whether a user's anchor regex can take exponential time: a repeated group that itself
 * holds an unbounded repetition (`(a+)+`, `(\w+\s?)*`, `(?:.*,)+`) tries every way to split
 * a run between the two, so one line of an agent's log can stall a turn's decision for
 * minutes, even within the 8 Ki characters a regex reads. `turnguard check` warns of it;
 * the regex still loads (it may be safe on the text it meets). Pure, one pass.
 */

/** The risk in one regex source, in words, or null when none is seen. */
export function regexRisk(source: string): string | null {
  /** Per open group: whether it holds an unbounded repetition, and where it opened. */
  const groups: { unbounded: boolean; at: number }[] = [];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      continue;
    }
    if (c === "[") {
      inClass = true;
    } else if (c === "(") {
      groups.push({ unbounded: false, at: i });
    } else if (c === ")") {
      const group = groups.pop();
      if (group === undefined) continue;
      const repeat = repetitionAt(source, i + 1);
      if (group.unbounded && repeat !== null && repeat.many) {
        return `the group at character ${
          group.at + 1
        } repeats (${repeat.text}) and holds an unbounded repetition: it may take exponential time on some lines`;
      }
      // A repeated group is itself an unbounded repetition for the groups around it.
      if (group.unbounded || repeat?.unbounded) markOpen(groups);
    } else {
      const repeat = repetitionAt(source, i);
      if (repeat?.unbounded) markOpen(groups);
    }
  }
  return null;
}

function markOpen(groups: { unbounded: boolean }[]): void {
  const top = groups.at(-1);
  if (top) top.unbounded = true;
}

/** The quantifier starting at `i`: whether it repeats more than once, and unboundedly. */
function repetitionAt(
  source: string,
  i: number,
): { many: boolean; unbounded: boolean; text: string } | null {
  const c = source[i];
  if (c === "+" || c === "*") return { many: true, unbounded: true, text: c };
  if (c !== "{") return null;
  const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i, i + 24));
  if (!m) return null;
  const max = m[2] === undefined ? Number(m[1]) : m[3] === "" ? Infinity : Number(m[3]);
  return { many: max > 1, unbounded: max === Infinity, text: m[0] };
}
