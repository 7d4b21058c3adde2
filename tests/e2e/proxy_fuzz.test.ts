/**
 * A fuzz target over the proxy: random JSON-RPC shapes and byte noise in both directions,
 * in and out of turns. The client side is a seeded random stream written in random pieces;
 * the agent (fixtures/acp/fuzz_agent.js, same seed) answers now, later or never, adds noise
 * of its own and ends after EOF, early, or never. What must hold, whatever the seed:
 *
 * - the agent read exactly what the client sent (a prefix of it when it ended early);
 * - the client read exactly what the agent wrote, except the answers to the client's own
 *   requests (turnguard rewrites a turn's response, answers what the agent left open);
 * - every client request the agent read got exactly one answer (none got two);
 * - turnguard exits once both sides are gone.
 *
 * `make test` runs FUZZ_ITERATIONS (default 8) seeds; `make fuzz` runs many more. A
 * failure names its seed: `FUZZ_SEED=N bun test tests/e2e/proxy_fuzz.test.ts` replays it.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rng } from "../helpers/rng.ts";
import { BUN, fakeArgs, MAIN, scratch, testEnv } from "../fixtures/acp/harness.ts";

const FUZZ_AGENT = join(import.meta.dirname ?? ".", "..", "fixtures/acp/fuzz_agent.js");
const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 8);
const BASE = Number(process.env.FUZZ_BASE ?? 1);
const SEEDS = process.env.FUZZ_SEED
  ? [Number(process.env.FUZZ_SEED)]
  : Array.from({ length: ITERATIONS }, (_, i) => BASE + i);
/** How long turnguard may take to exit once both sides are gone (a loaded machine). */
const EXIT_BOUND_MS = 20_000;

setDefaultTimeout(EXIT_BOUND_MS + 20_000);

/** The client's side: a random stream of lines (as bytes), and the inspection limit used. */
function clientStream(seed: number, longBytes: number): Buffer {
  const r = rng(seed * 7919 + 1);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const parts: Buffer[] = [];
  const eol = () => (r() < 0.2 ? "\r\n" : "\n");
  const text = (s: string) => parts.push(Buffer.from(s + eol()));
  const ids = () =>
    pick(["1", "2", "3", '"a"', '"b\\u0063"', "null", "1e999", "-0", "9007199254740993", "7"]);
  for (let n = 15 + int(45); n > 0; n--) {
    const session = pick(["s1", "s2", "s3"]);
    switch (int(10)) {
      case 0:
      case 1:
      case 2:
        text(
          `{"jsonrpc":"2.0","id":${ids()},"method":"session/prompt","params":{"sessionId":"${session}","prompt":[{"type":"text","text":"p${
            int(99)
          }"}]}}`,
        );
        break;
      case 3:
        text(
          `{"jsonrpc":"2.0","id":${ids()},"method":"${
            pick(["session/new", "x/other", "_ext"])
          }","params":{}}`,
        );
        break;
      case 4:
        text(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"${session}"}}`);
        break;
      case 5:
        text(
          `{"jsonrpc":"2.0","id":"agent-${
            int(1000)
          }","result":{"outcome":{"outcome":"cancelled"}}}`,
        );
        break;
      case 6: {
        const bytes = Buffer.alloc(1 + int(40));
        for (let i = 0; i < bytes.length; i++) bytes[i] = int(256) === 10 ? 32 : int(256);
        for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) bytes[i] = 32;
        parts.push(bytes, Buffer.from("\n"));
        break;
      }
      case 7: {
        const depth = 600 + int(2000);
        text(
          `{"jsonrpc":"2.0","id":${ids()},"method":"session/prompt","params":{"sessionId":"${session}","prompt":[],"_meta":${
            "[".repeat(depth)
          }${"]".repeat(depth)}}}`,
        );
        break;
      }
      case 8:
        text(
          `{"jsonrpc":"2.0","id":${ids()},"method":"x/long","params":{"p":"${
            "q".repeat(longBytes + int(300))
          }"}}`,
        );
        break;
      default:
        text(pick(["", "{", "[1,2]", '{"jsonrpc":"2.0"}', "null"]));
    }
  }
  return Buffer.concat(parts);
}

/** Splits bytes into lines, each with its terminator (the last may have none). */
function linesOf(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10, start)) {
    out.push(bytes.subarray(start, nl + 1));
    start = nl + 1;
  }
  if (start < bytes.length) out.push(bytes.subarray(start));
  return out;
}

/** A key for a request id as JSON reads it (`1` and `"1"` differ; 1e999 is Infinity). */
function idKey(id: unknown): string {
  return typeof id === "number" ? `n${id}` : typeof id === "string" ? `s${id}` : `${id}`;
}

function parse(line: Buffer): Record<string, unknown> | null {
  try {
    const value = JSON.parse(line.toString());
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** Requests per id key among lines. */
function requests(lines: Buffer[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) {
    const m = parse(line);
    if (m && typeof m.method === "string" && "id" in m) {
      counts.set(idKey(m.id), (counts.get(idKey(m.id)) ?? 0) + 1);
    }
  }
  return counts;
}

/** Whether a line is a response to one of the client's request ids. */
function answersClient(line: Buffer, clientIds: Map<string, number>): string | null {
  const m = parse(line);
  if (!m || "method" in m || !("id" in m) || !("result" in m || "error" in m)) return null;
  return clientIds.has(idKey(m.id)) ? idKey(m.id) : null;
}

async function fuzzOnce(seed: number): Promise<void> {
  const r = rng(seed);
  const s = scratch();
  const longBytes = 200 + Math.floor(r() * 2000);
  const sent = clientStream(seed, longBytes);
  const agentIn = join(s.dir, "agent-in");
  const agentOut = join(s.dir, "agent-out");
  writeFileSync(agentIn, "");
  writeFileSync(agentOut, "");
  const child = spawn(
    BUN,
    [
      MAIN,
      "proxy",
      ...fakeArgs(s, ["--grace", "0.2", "--max-line-bytes", String(longBytes)]),
      "--",
      "node",
      FUZZ_AGENT,
    ],
    {
      stdio: ["pipe", "pipe", "pipe"],
      env: testEnv(s, {
        FUZZ_SEED: String(seed),
        FUZZ_AGENT_IN: agentIn,
        FUZZ_AGENT_OUT: agentOut,
        FUZZ_LONG: String(longBytes),
      }),
      cwd: s.dir,
    },
  );
  const out: Buffer[] = [];
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => out.push(c));
  child.stderr!.on("data", (c: Buffer) => stderr += c.toString());
  const ended = new Promise((res) => child.stdout!.once("end", res));
  const closed = new Promise<number | null>((res) => child.once("close", (code) => res(code)));
  child.stdin!.on("error", () => {});
  // The client writes in random pieces, some after a pause (in and out of turns).
  for (let at = 0; at < sent.length;) {
    const n = 1 + Math.floor(r() * 4000);
    child.stdin!.write(sent.subarray(at, at + n));
    at += n;
    if (r() < 0.3) await new Promise((res) => setTimeout(res, Math.floor(r() * 30)));
  }
  // The client leaves once the agent read something (its first line says so): a loaded
  // machine may take longer than the grace to start it, and an agent killed before it read
  // is no test.
  while (out.length === 0 && child.exitCode === null) {
    await new Promise((res) => setTimeout(res, 10));
  }
  child.stdin!.end();
  const clientGone = Date.now();
  const timer = setTimeout(() => child.kill("SIGKILL"), EXIT_BOUND_MS);
  await closed;
  await ended;
  clearTimeout(timer);
  const context = `seed ${seed} (replay: FUZZ_SEED=${seed} bun test tests/e2e/proxy_fuzz.test.ts)`;
  expect(Date.now() - clientGone, `${context}: turnguard exits`).toBeLessThan(EXIT_BOUND_MS);

  const read = readFileSync(agentIn);
  const wrote = readFileSync(agentOut);
  const got = Buffer.concat(out);
  // The agent ran: it reads at least one line whichever way it ends.
  expect(read.length, `${context}: the agent read its input`).toBeGreaterThan(0);
  // Client → agent: byte for byte (the agent may have ended before it read it all).
  expect(sent.subarray(0, read.length).equals(read), `${context}: client → agent bytes`).toBe(
    true,
  );
  // Agent → client: byte for byte, apart from answers to the client's requests.
  const clientIds = requests(linesOf(sent));
  const other = (lines: Buffer[]) =>
    Buffer.concat(lines.filter((l) => answersClient(l, clientIds) === null));
  const agentOther = other(linesOf(wrote));
  const clientOther = other(linesOf(got));
  expect(clientOther.toString("latin1"), `${context}: agent → client bytes`).toBe(
    agentOther.toString("latin1"),
  );
  // One answer per request: every request the agent read, at most those the client sent.
  const answers = new Map<string, number>();
  for (const line of linesOf(got)) {
    const key = answersClient(line, clientIds);
    if (key !== null) answers.set(key, (answers.get(key) ?? 0) + 1);
  }
  const readIds = requests(linesOf(read).filter((l) => l.at(-1) === 10));

  for (const [key, n] of clientIds) {
    const answered = answers.get(key) ?? 0;
    expect(answered, `${context}: answers to id ${key}`).toBeLessThanOrEqual(n);
    expect(answered, `${context}: answers to id ${key}`).toBeGreaterThanOrEqual(
      readIds.get(key) ?? 0,
    );
  }
  expect(stderr, `${context}: stderr`).not.toContain("reading a line failed");
}

describe("proxy fuzz", () => {
  for (const seed of SEEDS) test(`seed ${seed}`, () => fuzzOnce(seed));
});
