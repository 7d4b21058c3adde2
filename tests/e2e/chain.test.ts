/**
 * `turnguard proxy --chain` as a link of a real conductor's proxy chain: @thinkwell/conductor
 * (from the registry) runs the compiled turnguard between the ACP SDK client and the example
 * agent, alone and behind another proxy; a conductor written here speaks the RFD's
 * generation (`proxy/initialize`, `proxy/successor`) to it line by line.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import * as acp from "@agentclientprotocol/sdk";
import {
  type ComponentConnection,
  Conductor,
  createChannelPair,
  fromCommands,
} from "@thinkwell/conductor";
import { ensureBinary } from "../helpers/binary.ts";
import { BUN, ROOT } from "../helpers/cli.ts";
import { CHAIN_LINE_FACTOR } from "../../lib/proxy/chain.ts";

setDefaultTimeout(60_000);

const AGENT = join(ROOT, "examples", "agents", "acp_agent.mjs");
const CONFIG = join(ROOT, "examples", "agents", "turnguard.toml");
const PASSTHROUGH = join(ROOT, "tests", "fixtures", "chain", "passthrough_proxy.ts");
const ANSWER = "Hello from the example agent.";
const CAUSE = "backend: 429 Too Many Requests (rate limit exceeded for this API key)";

let dir: string;
let bin: string;
beforeAll(() => {
  bin = ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "tg-chain-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Json = Record<string, unknown>;
let runs = 0;

/** One chain run's files: what turnguard said on stderr, its exit status, the wire logs. */
interface Files {
  stderr: string;
  status: string;
  agentIn: string;
  agentOut: string;
  outcomes: string;
}

function files(): Files {
  const d = join(dir, `run-${++runs}`);
  const mk = (n: string) => join(`${d}-${n}`);
  return {
    stderr: mk("stderr"),
    status: mk("status"),
    agentIn: mk("agent-in.jsonl"),
    agentOut: mk("agent-out.jsonl"),
    outcomes: mk("outcomes.jsonl"),
  };
}

/** turnguard's exit status, once the wrapper wrote it (turnguard ends on its own). */
async function exitStatus(f: Files): Promise<string> {
  for (let i = 0; i < 100 && !existsSync(f.status); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return readFileSync(f.status, "utf8").trim();
}

/** turnguard as the conductor starts it, its stderr and exit status kept in files. */
function turnguardCommand(f: Files, flags: string[]) {
  return {
    command: "sh",
    args: [
      "-c",
      // The conductor sends the wrapper SIGTERM when turnguard is not gone 250 ms after its
      // stdin closed (a loaded machine): the wrapper waits on, so the status is turnguard's.
      `trap '' TERM; "$0" "$@" 2>>'${f.stderr}'; echo $? >'${f.status}'`,
      bin,
      "proxy",
      "--chain",
      "-v",
      "--outcome-file",
      f.outcomes,
      "--config",
      CONFIG,
      ...flags,
    ],
  };
}

/** The example agent, with what it reads and writes copied to files. */
function agentCommand(f: Files, mode: string, env: Json) {
  return {
    command: "sh",
    args: ["-c", `tee '${f.agentIn}' | node '${AGENT}' ${mode} | tee '${f.agentOut}'`],
    env: env as Record<string, string>,
  };
}

/** A channel whose far end the SDK client speaks on; every message both ways is kept. */
function sdkStream(end: ComponentConnection, seen: { dir: "out" | "in"; m: Json }[]): acp.Stream {
  return {
    readable: new ReadableStream({
      async start(c) {
        for await (const m of end.messages) {
          seen.push({ dir: "in", m: m as unknown as Json });
          c.enqueue(m as acp.AnyMessage);
        }
        c.close();
      },
    }),
    writable: new WritableStream({
      write(m) {
        seen.push({ dir: "out", m: m as Json });
        end.send(m as never);
      },
    }),
  };
}

const lines = (path: string): Json[] =>
  existsSync(path)
    ? readFileSync(path, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l))
    : [];

/** A message with its id taken out (the conductor numbers each hop's requests itself). */
function withoutId(m: Json): Json {
  const { id: _id, ...rest } = m;
  return rest;
}

/** The initialize params the conductor adds `_meta.proxy` to for its first proxy. */
function withoutProxyMeta(m: Json): Json {
  if (m.method !== "initialize") return m;
  const params = { ...(m.params as Json) };
  const meta = { ...(params._meta as Json | undefined) };
  delete meta.proxy;
  if (Object.keys(meta).length === 0) delete params._meta;
  else params._meta = meta;
  return { ...m, params };
}

interface ChainRun {
  seen: { dir: "out" | "in"; m: Json }[];
  answer: acp.PromptResponse | acp.RequestError;
  updates: acp.SessionNotification[];
  f: Files;
}

/** The SDK client through the conductor's chain: initialize, session/new, one prompt. */
async function chainRun(
  mode: string,
  proxies: "turnguard" | "behind" | "before",
  flags: string[],
): Promise<ChainRun> {
  const f = files();
  const home = mkdtempSync(join(dir, "home-"));
  const env = { HOME: home };
  const tg = { ...turnguardCommand(f, flags), env };
  const other = { command: BUN, args: [PASSTHROUGH] };
  const agent = agentCommand(f, mode, env);
  const chain = proxies === "turnguard"
    ? [tg, agent]
    : proxies === "behind"
    ? [other, tg, agent]
    : [tg, other, agent];
  const conductor = new Conductor({ instantiator: fromCommands(chain) });
  const pair = createChannelPair();
  const loop = conductor.connect({ connect: () => Promise.resolve(pair.left) });
  const seen: ChainRun["seen"] = [];
  const updates: acp.SessionNotification[] = [];
  const app = acp.client({ name: "chain-test" })
    .onNotification("session/update", ({ params }) => void updates.push(params));
  const answer = await app.connectWith(sdkStream(pair.right, seen), async (ctx) => {
    await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    const { sessionId } = await ctx.request("session/new", { cwd: dir, mcpServers: [] });
    return await ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hi" }],
    })
      .catch((err) => {
        if (err instanceof acp.RequestError) return err;
        throw err;
      });
  });
  // The conductor ends the chain: it closes every component's stdin.
  await conductor.shutdown();
  await loop;
  return { seen, answer, updates, f };
}

/** Each request the client sent got exactly one answer. */
function expectOneAnswerEach(seen: ChainRun["seen"]) {
  const asked = seen.filter((s) => s.dir === "out" && s.m.method !== undefined && "id" in s.m);
  const answers = seen.filter((s) => s.dir === "in" && s.m.method === undefined);
  expect(asked.length).toBeGreaterThan(0);
  for (const a of asked) expect(answers.filter((s) => s.m.id === a.m.id).length).toBe(1);
  expect(answers.length).toBe(asked.length);
}

/** The answer to initialize with the `_meta.proxy: true` turnguard adds for the conductor taken out. */
function withoutAcceptedProxy(m: Json): Json {
  const result = m.result as Json | undefined;
  const meta = result?._meta as Json | undefined;
  if (meta?.proxy !== true) return m;
  const { proxy: _proxy, ...rest } = meta;
  const { _meta: _m, ...others } = result!;
  return { ...m, result: Object.keys(rest).length > 0 ? { ...others, _meta: rest } : others };
}

/** What the client sent is what the agent read, and what the agent wrote, the client read. */
function expectUnchanged(r: ChainRun, rewritten: (m: Json) => boolean = () => false) {
  const sent = r.seen.filter((s) => s.dir === "out").map((s) => withoutId(s.m));
  expect(lines(r.f.agentIn).map((m) => withoutId(withoutProxyMeta(m)))).toEqual(sent);
  const got = r.seen.filter((s) => s.dir === "in").map((s) => withoutAcceptedProxy(s.m));
  const wrote = lines(r.f.agentOut);
  expect(got.length).toBe(wrote.length);
  got.forEach((m, i) => {
    if (!rewritten(m)) expect(withoutId(m)).toEqual(withoutId(wrote[i]));
  });
}

describe("turnguard in @thinkwell/conductor's chain", () => {
  test("between the SDK client and the agent: every message unchanged, one answer each, ends with the chain", async () => {
    const r = await chainRun("answer", "turnguard", []);
    expect(r.answer).toEqual({ stopReason: "end_turn" });
    expect(
      r.updates.map((u) => (u.update as { content?: { text?: string } }).content?.text).join(""),
    )
      .toBe(ANSWER);
    expectOneAnswerEach(r.seen);
    expectUnchanged(r);
    expect(await exitStatus(r.f)).toBe("0");
    const stderr = readFileSync(r.f.stderr, "utf8");
    expect(stderr).toContain(
      "turnguard: chain: initialized by initialize with _meta.proxy; the successor is reached through _proxy/successor/request and _proxy/successor/notification\n",
    );
    expect(stderr.split("initialized by").length).toBe(2);
    expect(stderr).toContain(
      "turnguard: chain: profile chain names no logs or session records (--profile NAME names the agent's): only the wire is read; the agent's exit status and stderr are the conductor's, unavailable here\n",
    );
    const [o] = lines(r.f.outcomes);
    expect([o.mode, o.agent, o.status]).toEqual(["proxy", "chain", "ok"]);
  });

  test("a swallowed failure with --profile: the agent's log read, the turn answered with its cause", async () => {
    const r = await chainRun("swallow", "turnguard", ["--profile", "example"]);
    expect(r.answer).toBeInstanceOf(acp.RequestError);
    expect((r.answer as acp.RequestError).message).toBe(CAUSE);
    expectOneAnswerEach(r.seen);
    // The documented rewrite: the agent's end_turn answer to the prompt became the error.
    expectUnchanged(r, (m) => "error" in m);
    const [o] = lines(r.f.outcomes);
    expect([o.agent, o.status, (o.error as Json).category]).toEqual([
      "example",
      "failed",
      "rate_limit",
    ]);
    expect(readFileSync(r.f.stderr, "utf8")).toContain(
      "turnguard: chain: profile example: the agent's logs and session records are read;",
    );
  });

  test.each(["behind", "before"] as const)(
    "%s another proxy: the same messages, the same answer",
    async (where) => {
      const r = await chainRun("answer", where, []);
      expect(r.answer).toEqual({ stopReason: "end_turn" });
      expectOneAnswerEach(r.seen);
      expectUnchanged(r);
      expect(await exitStatus(r.f)).toBe("0");
      expect(lines(r.f.outcomes).map((o) => o.status)).toEqual(["ok"]);
    },
  );
});

/** `turnguard proxy --chain ARGS` with a conductor written here: its lines out, one at a time. */
function startLink(args: string[]) {
  const child = spawn(bin, ["proxy", "--chain", ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { PATH: process.env.PATH, HOME: mkdtempSync(join(dir, "home-")) },
  });
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  const out: Json[] = [];
  let wake = () => {};
  createInterface({ input: child.stdout }).on("line", (l) => {
    out.push(JSON.parse(l));
    wake();
  });
  const next = async (): Promise<Json> => {
    while (out.length === 0) await new Promise<void>((r) => (wake = r));
    return out.shift()!;
  };
  const closed = new Promise<number | null>((r) => child.on("close", r));
  return { child, out, next, stderr: () => err, closed };
}

describe("the RFD's generation, spoken by a conductor written here", () => {
  test("proxy/initialize, proxy/successor both ways, one answer each, exit 0 at EOF", async () => {
    const f = files();
    const { child, out, next, stderr, closed } = startLink(["-v", "--outcome-file", f.outcomes]);
    const send = (m: Json) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");

    const init = { protocolVersion: 1, clientCapabilities: {} };
    send({ id: 1, method: "proxy/initialize", params: init });
    const fwd = await next();
    expect(withoutId(fwd)).toEqual({
      jsonrpc: "2.0",
      method: "proxy/successor",
      params: { method: "initialize", params: init },
    });
    // The ids of the requests it wraps are its own.
    expect(String(fwd.id)).toStartWith("turnguard-successor-");
    const agentInit = { protocolVersion: 1, agentCapabilities: {}, authMethods: [] };
    send({ id: fwd.id, result: agentInit });
    expect(await next()).toEqual({ jsonrpc: "2.0", id: 1, result: agentInit });

    // A line that is no message cannot be wrapped: it is dropped, and said.
    child.stdin.write("not json\n");
    send({ id: 2, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } });
    const newFwd = await next();
    expect((newFwd.params as Json).method).toBe("session/new");
    send({ id: newFwd.id, result: { sessionId: "s1" } });
    expect(await next()).toEqual({ jsonrpc: "2.0", id: 2, result: { sessionId: "s1" } });

    send({
      id: 3,
      method: "session/prompt",
      params: { sessionId: "s1", prompt: [{ type: "text", text: "hi" }] },
    });
    const promptFwd = await next();
    expect(promptFwd.method).toBe("proxy/successor");
    // Cancelling a wrapped request names the envelope's id, on this hop only (the RFD).
    send({ method: "$/cancel_request", params: { id: 3 } });
    expect(await next()).toEqual({
      jsonrpc: "2.0",
      method: "$/cancel_request",
      params: { id: promptFwd.id },
    });
    // The successor's notification and request come out of the envelope.
    const update = {
      sessionId: "s1",
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hey" } },
    };
    send({ method: "proxy/successor", params: { method: "session/update", params: update } });
    expect(await next()).toEqual({ jsonrpc: "2.0", method: "session/update", params: update });
    const ask = { sessionId: "s1", toolCall: { toolCallId: "t" }, options: [] };
    send({
      id: 90,
      method: "proxy/successor",
      params: { method: "session/request_permission", params: ask },
    });
    expect(await next()).toEqual({
      jsonrpc: "2.0",
      id: 90,
      method: "session/request_permission",
      params: ask,
    });
    // Its answer goes back as a plain answer to the envelope's id.
    send({ id: 90, result: { outcome: { outcome: "cancelled" } } });
    expect(await next()).toEqual({
      jsonrpc: "2.0",
      id: 90,
      result: { outcome: { outcome: "cancelled" } },
    });
    send({ id: promptFwd.id, result: { stopReason: "end_turn" } });
    expect(await next()).toEqual({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" } });

    // A prompt still open when the conductor ends the chain is answered once.
    send({
      id: 4,
      method: "session/prompt",
      params: { sessionId: "s1", prompt: [{ type: "text", text: "again" }] },
    });
    expect(((await next()).params as Json).method).toBe("session/prompt");
    child.stdin.end();
    expect(await closed).toBe(0);
    expect(out.filter((m) => m.id === 4).length).toBe(1);
    expect(out.filter((m) => m.id === 4)[0].error).toBeDefined();
    expect(stderr()).toContain(
      "turnguard: chain: a line toward the successor is not a JSON-RPC message: dropped\n",
    );
    expect(out.some((m) => JSON.stringify(m).includes("not json"))).toBe(false);
    expect(stderr().split("\n").filter((l) => l.includes("initialized by"))).toEqual([
      "turnguard: chain: initialized by proxy/initialize; the successor is reached through proxy/successor",
    ]);
    expect(lines(f.outcomes).map((o) => o.status)).toEqual(["ok", "cancelled"]);
  });

  test("a conductor line past twice --max-line-bytes is dropped as it passes, not held; the next is read", async () => {
    const limit = 1024 * 1024;
    const { child, next, stderr, closed } = startLink(["--max-line-bytes", String(limit)]);
    // A notification of 160 MiB (80 times the bound), in 1 MiB writes, each waiting for the
    // pipe to take it.
    const block = new Uint8Array(1024 * 1024).fill(0x61);
    const write = (b: Uint8Array | string) =>
      new Promise<void>((r) => child.stdin.write(b) ? r() : child.stdin.once("drain", r));
    await write('{"jsonrpc":"2.0","method":"x","params":"');
    for (let i = 0; i < 160; i++) await write(block);
    await write('"}\n');
    const init = { protocolVersion: 1, clientCapabilities: {} };
    await write(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "proxy/initialize", params: init }) + "\n",
    );
    // Had the long line been routed, it would have come first (wrapped toward the successor).
    expect((await next()).method).toBe("proxy/successor");
    // The long line was read through before the next line was.
    const peak = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
    child.stdin.end();
    expect(await closed).toBe(0);
    expect(stderr()).toContain(
      `turnguard: chain: a line from the conductor of ${160 * block.length + 43} bytes was ` +
        `dropped: longer than ${CHAIN_LINE_FACTOR * limit} bytes, it cannot be routed unread\n`,
    );
    // Held whole, the line alone was 160 MiB (its text as much again); about 70 MiB measured
    // with the bound, the runtime's own included.
    expect(Number(peak![1]) * 1024).toBeLessThan(128 * block.length);
  });

  test("SIGTERM ends the link: the open prompt answered once, exit 143", async () => {
    const { child, out, next, closed } = startLink([]);
    const send = (m: Json) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
    send({ id: 1, method: "proxy/initialize", params: { protocolVersion: 1 } });
    send({ id: (await next()).id, result: { protocolVersion: 1 } });
    await next();
    send({ id: 2, method: "session/prompt", params: { sessionId: "s", prompt: [] } });
    await next();
    child.kill("SIGTERM");
    expect(await closed).toBe(143);
    expect(out.filter((m) => m.id === 2).length).toBe(1);
    expect(out.filter((m) => m.id === 2)[0].error).toBeDefined();
  });

  test.each([
    [["--chain", "--", "true"], "--chain: the successor is the conductor's; give no agent command"],
    [["--chain", "--profile", "nobody"], "--profile nobody: no such agent profile"],
    [
      ["--agent", "gemini", "--profile", "claude", "--", "true"],
      "--profile claude: --agent names another profile (gemini)",
    ],
  ])("usage error: %j", async (args, message) => {
    const child = spawn(bin, ["proxy", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH, HOME: mkdtempSync(join(dir, "home-")) },
    });
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    const code = await new Promise<number | null>((r) => child.on("close", r));
    expect(code).toBe(125);
    expect(stderr).toContain(message);
  });
});
