/**
 * The recorded corpus (tests/agents/corpus/) replayed through a conductor's chain: the SDK-free
 * client here replays the recorded client lines through @thinkwell/conductor, which runs
 * `turnguard proxy --chain --profile P` in front of the replay agent; each turn's Outcome must
 * be the one the same transcript gives through `turnguard proxy -- AGENT` (tests/agents/
 * replay.ts), and the client must receive the lines the agent recorded. A representative
 * subset runs by default; TURNGUARD_CHAIN_CORPUS=all replays every transcript.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Conductor, createChannelPair, fromCommands } from "@thinkwell/conductor";
import type { Outcome } from "../../lib/core/outcome.ts";
import { corpusCases, PROFILE, replay } from "../agents/replay.ts";
import { readTranscript } from "../agents/transcript.ts";
import { ensureBinary } from "../helpers/binary.ts";
import { BUN, ROOT } from "../helpers/cli.ts";

setDefaultTimeout(60_000);

const CHAIN_AGENT = join(ROOT, "tests", "fixtures", "chain", "replay_agent.ts");

/** The default subset: each agent, a clean turn, wire errors, log-only causes, a dead agent. */
const SUBSET = [
  "claude-agent-acp/ok",
  "claude-code-acp/rate_limit",
  "gemini-cli/quota_daily",
  "codex-acp/midstream_overloaded",
  "gemini-cli/stream_cut",
  "codex-acp/no_answer",
];

/** Longest wait for the chain's next line: past it the replay goes on (and its test fails). */
const LINE_WAIT_MS = 15_000;

type Json = Record<string, unknown>;

const parse = (line: string): Json | null => {
  try {
    const v = JSON.parse(line);
    return v && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
};

/** What a chain replay left: the client's received messages and the Outcomes. */
interface ChainReplayed {
  received: Json[];
  outcomes: Outcome[];
}

/** Replays one transcript through the conductor's chain. */
async function chainReplay(agent: string, path: string): Promise<ChainReplayed> {
  const bin = ensureBinary();
  const dir = mkdtempSync(join(tmpdir(), "turnguard-chain-corpus-"));
  const home = join(dir, "home");
  mkdirSync(home);
  const outcomes = join(dir, "outcomes.jsonl");
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_STATE_HOME: join(home, ".state"),
  };
  const conductor = new Conductor({
    instantiator: fromCommands([
      {
        command: bin,
        args: ["proxy", "--chain", "--profile", PROFILE[agent], "--outcome-file", outcomes],
        env,
        cwd: dir,
      },
      { command: BUN, args: [CHAIN_AGENT, path], env: { ...env, REPLAY_HOME: home }, cwd: dir },
    ]),
  });
  const pair = createChannelPair();
  const loop = conductor.connect({ connect: () => Promise.resolve(pair.left) });
  const received: Json[] = [];
  let wake = () => {};
  let gone = false;
  void (async () => {
    for await (const m of pair.right.messages) {
      received.push(m as unknown as Json);
      wake();
    }
    gone = true;
    wake();
  })();
  const receivedAtLeast = async (n: number) => {
    const until = Date.now() + LINE_WAIT_MS;
    while (received.length < n && !gone && Date.now() < until) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 100);
      });
    }
  };
  // The recorded lines the agent wrote, in order: a request of the agent reaches the client
  // under the conductor's id, and the client's recorded answer must name that id.
  const { events } = readTranscript(path);
  const a2c = events.filter((e) => e.dir === "a2c").map((e) => parse(e.line)).filter((m) =>
    m !== null
  );
  const ids = new Map<string, unknown>();
  let expectA2c = 0;
  let mapped = 0;
  const mapIds = () => {
    for (; mapped < received.length && mapped < a2c.length; mapped++) {
      const got = received[mapped];
      const was = a2c[mapped];
      if ("method" in got && "id" in got && "method" in was && "id" in was) {
        ids.set(JSON.stringify(was.id), got.id);
      }
    }
  };
  for (const e of events) {
    if (e.dir === "a2c" && parse(e.line) !== null) expectA2c++;
    if (e.dir !== "c2a") continue;
    await receivedAtLeast(expectA2c);
    mapIds();
    const m = parse(e.line);
    if (m === null) continue;
    const key = JSON.stringify(m.id);
    const answer = !("method" in m) && ids.has(key);
    pair.right.send((answer ? { ...m, id: ids.get(key) } : m) as never);
  }
  await receivedAtLeast(expectA2c);
  // The conductor ends the chain.
  await conductor.shutdown();
  await loop;
  const text = existsSync(outcomes) ? readFileSync(outcomes, "utf8") : "";
  return {
    received,
    outcomes: text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Outcome),
  };
}

/** What an Outcome says about its turn, without what differs by run (times, paths, ids). */
function verdict(o: Outcome) {
  return {
    turn: o.turn,
    status: o.status,
    stopReason: o.stopReason,
    error: o.error && { ...o.error, source: o.error.source !== null },
    // When a retry may start depends on when the replay ran (a quota reset already past).
    retry: o.retry && { retryable: o.retry.retryable, reason: o.retry.reason.replace(/\d+/g, "#") },
    reply: o.reply,
  };
}

/**
 * A message without its id (the conductor numbers each hop's requests itself), and without
 * the moment a retry may start in turnguard's annotation of an error (it depends on when the
 * replay ran).
 */
function withoutId(m: Json): Json {
  const { id: _id, ...rest } = m;
  const retry = ((rest.error as Json | undefined)?.data as Json | undefined)?.turnguard as
    | Json
    | undefined;
  const hint = retry?.retry as Json | undefined;
  if (hint && typeof hint === "object") {
    retry!.retry = {
      ...hint,
      afterMs: null,
      at: null,
      reason: String(hint.reason).replace(/\d+/g, "#"),
    };
  }
  return rest;
}

const all = process.env.TURNGUARD_CHAIN_CORPUS === "all";
const cases = corpusCases().filter(([agent, scenario]) =>
  all || SUBSET.includes(`${agent}/${scenario}`)
);

describe(`the corpus through @thinkwell/conductor's chain (${all ? "all" : "subset"})`, () => {
  test("the subset is in the corpus", () => {
    if (!all) expect(cases.length).toBe(SUBSET.length);
  });
  for (const [agent, scenario, path] of cases) {
    test(`${agent}/${scenario}: the same Outcomes as stdio mode, the recorded lines`, async () => {
      const [stdio, chain] = await Promise.all([replay(agent, path), chainReplay(agent, path)]);
      expect(stdio.outcomes.length).toBeGreaterThan(0);
      expect(chain.outcomes.map(verdict)).toEqual(stdio.outcomes.map(verdict));
      // What the client received through the chain is what it received through stdio mode
      // (the recorded lines and turnguard's rewrites), ids aside.
      const direct = stdio.received.map(parse).filter((m) => m !== null);
      expect(chain.received.map(withoutAcceptedProxy).map(withoutId))
        .toEqual(direct.map(withoutId));
    });
  }
});

/** The answer to initialize with the `_meta.proxy: true` turnguard adds for the conductor out. */
function withoutAcceptedProxy(m: Json): Json {
  const result = m.result as Json | undefined;
  const meta = result?._meta as Json | undefined;
  if (meta?.proxy !== true) return m;
  const { proxy: _proxy, ...rest } = meta;
  const { _meta: _m, ...others } = result!;
  return { ...m, result: Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others };
}
