/**
 * The real-agent corpus replayed through the compiled `turnguard proxy`: every recorded turn
 * of tests/agents/corpus/AGENT/SCENARIO.jsonl is played back by the replay agent (no network,
 * no agent install) while a client replays the recorded client lines, and the Outcome the
 * proxy wrote must meet the expectation a person wrote in SCENARIO.expect.json. The wire must
 * also pass through unchanged: the client receives exactly the lines the agent recorded.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/cli.ts";
import { readExpected, type Verdict } from "../agents/expected.ts";
import type { Outcome } from "../../lib/core/outcome.ts";
import { type DocRow, renderTables, withTables } from "../agents/agents_doc.ts";
import {
  corpusCases,
  corpusTranscript,
  PROFILE,
  replay,
  type Replayed,
  turnguardBinary,
} from "../agents/replay.ts";
import { execFile } from "node:child_process";
import { tmpdir } from "node:os";

setDefaultTimeout(60_000);

/**
 * `line` with the `data.turnguard` the proxy adds to an error response taken out again (and
 * `data` when the agent sent none), as the recorded line's JSON; the recorded line also for
 * the documented rewrite of a swallowed failure (README "proxy"): the agent's `end_turn`
 * result to the same request, answered instead with a -32603 error whose `data.turnguard`
 * says `failed` and keeps that stopReason. Any other line as it is.
 */
function withoutAnnotation(line: string, recorded: string | undefined): string {
  if (line === recorded || recorded === undefined || !line.includes('"turnguard"')) return line;
  const msg = JSON.parse(line);
  const was = JSON.parse(recorded);
  const tg = msg.error?.data?.turnguard;
  if (
    was.result !== undefined && msg.id === was.id && msg.error?.code === -32603 &&
    tg?.status === "failed" && tg.stopReason === was.result.stopReason
  ) {
    return recorded;
  }
  const data = msg.error?.data;
  if (typeof data !== "object" || data === null || !("turnguard" in data)) return line;
  delete data.turnguard;
  if (Object.keys(data).length === 0 && JSON.parse(recorded).error?.data === undefined) {
    delete msg.error.data;
  }
  return canonical(msg) === canonical(JSON.parse(recorded)) ? recorded : line;
}

/** JSON with object keys sorted (the proxy writes a rewritten response's keys in its order). */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
        : v,
  );
}

/**
 * Per session/prompt, in order: the error object the agent answered it with, as JSON; or null.
 */
function promptErrors(events: { dir: string; line: string }[]): (string | null)[] {
  const ids: unknown[] = [];
  const errors: (string | null)[] = [];
  for (const e of events) {
    let m;
    try {
      m = JSON.parse(e.line.startsWith("{") ? e.line : "null");
    } catch {
      continue;
    }
    if (m === null || (e.dir !== "c2a" && e.dir !== "a2c")) continue;
    if (e.dir === "c2a" && m.method === "session/prompt") {
      ids.push(m.id);
      errors.push(null);
    } else if (e.dir === "a2c" && m.method === undefined && ids.includes(m.id)) {
      errors[ids.indexOf(m.id)] = m.error ? JSON.stringify(m.error) : null;
    }
  }
  return errors;
}

/** Checks one turn's Outcome against what a person expects of it. */
function meets(o: Outcome, want: Omit<Verdict, "why">, turn: number): void {
  const got = {
    turn,
    status: o.status,
    category: o.error?.category ?? null,
    retryable: o.retry?.retryable ?? null,
  };
  expect(got).toEqual({
    turn,
    status: want.status,
    category: want.category,
    retryable: want.retryable,
  });
  if (want.category === null) expect(o.error).toBeNull();
  if (want.message !== undefined) {
    expect(o.error?.message.toLowerCase() ?? "").toContain(want.message.toLowerCase());
  }
  if (want.delay) expect(o.retry?.afterMs ?? o.retry?.at ?? null).not.toBeNull();
}

/**
 * The category `turnguard explain --json --kind error` gives each of `errors`, an agent's
 * errors: one process for them all, run without blocking (the replays go on meanwhile).
 */
function explainCategories(agent: string, errors: string[]): Promise<Map<string, string | null>> {
  if (errors.length === 0) return Promise.resolve(new Map());
  return new Promise((resolve, reject) => {
    execFile(
      turnguardBinary(),
      [
        "explain",
        "--json",
        "--kind",
        "error",
        ...(PROFILE[agent] ? ["--agent", PROFILE[agent]] : []),
        ...errors,
      ],
      { encoding: "utf8", env: { PATH: process.env.PATH, HOME: tmpdir() } },
      // explain exits 1 when no anchor matched an input: its JSON is on stdout all the same,
      // one document per input, in order.
      (_err, stdout) => {
        try {
          const docs = stdout.trim().split("\n").map((l) => JSON.parse(l));
          if (docs.length !== errors.length) {
            throw new Error(`explain: ${docs.length} documents for ${errors.length} inputs`);
          }
          resolve(new Map(errors.map((e, i) => [e, docs[i].category])));
        } catch (e) {
          reject(e);
        }
      },
    );
  });
}

const explained = new Map<string, Promise<Map<string, string | null>>>();
/**
 * What `explain` says of every error the agent answered a prompt with, anywhere in its part of
 * the corpus: one process per agent, started with its first replay.
 */
function explainedErrors(agent: string): Promise<Map<string, string | null>> {
  let p = explained.get(agent);
  if (p === undefined) {
    const errors = new Set<string>();
    for (const [a, , path] of cases) {
      if (a !== agent) continue;
      for (const e of promptErrors(corpusTranscript(path).events)) if (e !== null) errors.add(e);
    }
    explained.set(agent, p = explainCategories(agent, [...errors]));
  }
  return p;
}

/**
 * One transcript replayed, and the category `explain` gives the error of each of its prompts
 * the agent failed (null where it did not).
 */
interface Checked extends Replayed {
  explained: (string | null)[];
}

async function replayAndExplain(agent: string, path: string): Promise<Checked> {
  const categories = explainedErrors(agent);
  const r = await replay(agent, path);
  const errors = promptErrors(corpusTranscript(path).events);
  const byError = await categories;
  const explained = r.outcomes.map((o, i) => {
    const error = errors[i];
    return error !== null && error !== undefined && o.status === "failed"
      ? byError.get(error) ?? null
      : null;
  });
  return { ...r, explained };
}

const cases = corpusCases();

/**
 * How many replays run at once: each is mostly waiting (on its processes, and on the agent's
 * records, which the player writes as late as recorded, up to 600 ms after a turn's answer).
 */
const WIDTH = 8;
let replays: Map<string, Promise<Checked>> | null = null;

/**
 * The replay of one corpus case. The first call starts replaying every case, WIDTH at a time
 * and in corpus order, so a test mostly finds its replay done.
 */
function replayed(path: string): Promise<Checked> {
  if (replays === null) {
    const started = new Map<string, Promise<Checked>>();
    const settle = new Map<string, (r: Promise<Checked>) => void>();
    for (const [, , p] of cases) started.set(p, new Promise((r) => settle.set(p, r)));
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const [agent, , p] = cases[next++];
        const r = replayAndExplain(agent, p);
        settle.get(p)!(r);
        await r.catch(() => {}); // its test reports the failure
      }
    };
    for (let i = 0; i < WIDTH; i++) void worker();
    replays = started;
  }
  return replays.get(path)!;
}

const DOC = join(ROOT, "docs", "AGENTS.md");
/** The replayed fixtures, in corpus order, for the generated tables of docs/AGENTS.md. */
const rows: DocRow[] = [];

describe("the real-agent corpus through turnguard proxy", () => {
  test("the corpus is there", () => {
    expect(cases.length).toBeGreaterThan(0);
  });
  for (const [agent, scenario, path] of cases) {
    const expectPath = path.replace(/\.jsonl$/, ".expect.json");
    test(`${agent} ${scenario}`, async () => {
      expect(existsSync(expectPath)).toBe(true);
      const want = readExpected(expectPath);
      const { events } = corpusTranscript(path);
      const r = await replayed(path);
      // Pass-through: the client got the agent's lines as recorded, byte for byte, except the
      // documented rewrite of a failed prompt's error (its Outcome added as `data.turnguard`).
      const recorded = events.filter((e) => e.dir === "a2c").map((e) => e.line);
      expect(r.received.map((line, i) => withoutAnnotation(line, recorded[i]))).toEqual(recorded);
      const errors = promptErrors(events);
      // One Outcome per prompt, each as a person expects it: the earlier turns of a session
      // (`earlier`), then the last — or, for a truth turnguard cannot see, what it reports
      // instead (`blindSpot`).
      const turns = [...(want.earlier ?? []), want.blindSpot ?? want];
      expect(r.outcomes.length).toBe(errors.length);
      expect(r.outcomes.length).toBe(turns.length);
      rows.push({ transcript: corpusTranscript(path), expected: want, outcomes: r.outcomes });
      r.outcomes.forEach((o, i) => {
        // One classifier: `turnguard explain` on the agent's error gives the proxy's category.
        const error = errors[i];
        if (error !== null && o.status === "failed") {
          expect(r.explained[i]).toBe(o.error!.category);
        }
        meets(o, turns[i], i + 1);
      });
      if (want.earlier?.length) {
        // A turn after earlier ones in the same session: nothing of their failures, which the
        // session files still hold, shows in its Outcome.
        const last = r.outcomes[r.outcomes.length - 1];
        expect(last.diagnostics.filter((d) => /record|recover|restart|dropped/i.test(d)))
          .toEqual([]);
      }
    });
  }
  // Last: the tables of docs/AGENTS.md are those of this corpus (`make agents-doc` rewrites
  // them). Only when every fixture replayed (not under a test filter).
  test("docs/AGENTS.md shows every recorded turn as turnguard reports it", () => {
    if (rows.length !== cases.length) return;
    const doc = existsSync(DOC) ? readFileSync(DOC, "utf8") : "";
    const want = withTables(doc, renderTables(rows));
    if (process.env.UPDATE_AGENTS_DOC === "1") writeFileSync(DOC, want);
    expect(doc).toBe(want);
  });
});
