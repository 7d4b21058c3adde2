/**
 * The first-contact figure: how many recorded turns turnguard tells right when it meets an
 * agent with no profile and no pack for it — only the generic path reads the turn — against
 * the truth a person wrote in each SCENARIO.expect.json (its top level and `earlier`, never
 * its `blindSpot`). With `--pack`, the same count under the agent's built-in profile, so the
 * two figures of docs/AGENTS.md are measured the same way.
 *
 * A turn is right when its status, error category and retryability are the truth's. A failed
 * turn is one whose truth is not `ok`.
 *
 * Usage: bun tests/agents/first_contact.ts [--pack] [AGENT...] (default: every corpus agent).
 * Prints one table row per agent, the total, and each turn told wrong.
 */
import { existsSync } from "node:fs";
import type { Outcome } from "../../lib/core/outcome.ts";
import { type Expected, readExpected, type Verdict } from "./expected.ts";
import { corpusCases, PROFILE, replay } from "./replay.ts";

/** One turn's truth and what turnguard reported. */
export interface Told {
  agent: string;
  scenario: string;
  turn: number;
  truth: Verdict;
  outcome: Outcome | undefined;
}

/** The true verdicts of a fixture's turns, in order: `earlier`, then the top level. */
export function truths(want: Expected): Verdict[] {
  const { blindSpot: _b, earlier, ...last } = want;
  return [...(earlier ?? []), last];
}

/** Whether turnguard told the turn right: status, category and retryability. */
export function right(t: Told): boolean {
  const o = t.outcome;
  if (o === undefined) return false;
  return o.status === t.truth.status &&
    (o.error?.category ?? null) === t.truth.category &&
    (o.retry?.retryable ?? null) === t.truth.retryable;
}

/** Per agent: right failed turns / failed turns, right turns / turns. */
export interface Figure {
  agent: string;
  failed: number;
  failedRight: number;
  turns: number;
  turnsRight: number;
}

/** The figures of a list of told turns, per agent and (last) in total. */
export function figures(told: Told[]): Figure[] {
  const by = new Map<string, Figure>();
  const total: Figure = { agent: "total", failed: 0, failedRight: 0, turns: 0, turnsRight: 0 };
  for (const t of told) {
    const f = by.get(t.agent) ??
      { agent: t.agent, failed: 0, failedRight: 0, turns: 0, turnsRight: 0 };
    by.set(t.agent, f);
    const ok = right(t);
    for (const x of [f, total]) {
      x.turns++;
      if (ok) x.turnsRight++;
      if (t.truth.status !== "ok") {
        x.failed++;
        if (ok) x.failedRight++;
      }
    }
  }
  return [...by.values(), total];
}

const pct = (a: number, b: number) => (b === 0 ? "–" : `${Math.round((100 * a) / b)} %`);

/** A figure as a markdown table row. */
export function row(f: Figure): string {
  return `| ${f.agent} | ${f.failedRight} / ${f.failed} (${
    pct(f.failedRight, f.failed)
  }) | ${f.turnsRight} / ${f.turns} (${pct(f.turnsRight, f.turns)}) |`;
}

/** A turn as one line: what was true, what turnguard said. */
function describe(t: Told): string {
  const o = t.outcome;
  const said = o
    ? `${o.status} ${o.error?.category ?? "-"} retryable=${o.retry?.retryable ?? "-"}`
    : "no outcome";
  const truth = `${t.truth.status} ${t.truth.category ?? "-"} retryable=${t.truth.retryable}`;
  return `${t.agent} ${t.scenario} #${t.turn}: truth ${truth}; turnguard ${said}`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const pack = args.includes("--pack");
  const agents = args.filter((a) => !a.startsWith("--"));
  const cases = corpusCases().filter(([a]) => agents.length === 0 || agents.includes(a));
  const told: Told[] = [];
  // Four replays at a time: each mostly waits on its processes.
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const [agent, scenario, path] = cases[next++];
      const expectPath = path.replace(/\.jsonl$/, ".expect.json");
      if (!existsSync(expectPath)) {
        console.error(`${agent} ${scenario}: no expectation (${expectPath}); skipped`);
        continue;
      }
      if (pack && PROFILE[agent] === undefined) {
        console.error(`${agent}: no built-in profile; skipped`);
        continue;
      }
      const r = await replay(agent, path, pack ? PROFILE[agent] : null);
      truths(readExpected(expectPath)).forEach((truth, i) =>
        told.push({ agent, scenario, turn: i + 1, truth, outcome: r.outcomes[i] })
      );
    }
  };
  await Promise.all([0, 1, 2, 3].map(worker));
  told.sort((a, b) =>
    a.agent.localeCompare(b.agent) || a.scenario.localeCompare(b.scenario) || a.turn - b.turn
  );
  console.log(pack ? "with the agent's pack:" : "first contact (generic path only):");
  console.log("| agent | failed turns told right | all turns told right |");
  console.log("| --- | --- | --- |");
  for (const f of figures(told)) console.log(row(f));
  const wrong = told.filter((t) => !right(t));
  if (wrong.length) console.log(`\ntold wrong:\n${wrong.map(describe).join("\n")}`);
}

if (import.meta.main) await main();
