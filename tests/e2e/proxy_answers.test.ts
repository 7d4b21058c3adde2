/**
 * One answer per client request, whatever the agent sends (lib/proxy/answers.ts): an agent
 * that answers every request twice, answers ids nobody asked for, and answers a prompt after
 * turnguard already did. Real processes and pipes.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  BUN,
  fakeArgs,
  killedAfterEach,
  type ProxyProcess,
  type Scratch,
  scratch,
  startProxy,
} from "../fixtures/acp/harness.ts";

setDefaultTimeout(30_000);
const track = killedAfterEach();

/**
 * An agent that answers each request twice (a prompt: `end_turn` with a streamed word,
 * then an error), and once a response to id 99, which no one asked for.
 */
const TWICE = `
let buf = "";
process.stdin.on("data", (c) => {
  buf += c;
  let nl;
  while ((nl = buf.indexOf("\\n")) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    const m = JSON.parse(line);
    if (m.id === undefined || m.method === undefined) continue;
    const out = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...o }) + "\\n");
    if (m.method === "session/prompt") {
      out({ method: "session/update", params: { sessionId: m.params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } } });
      out({ id: m.id, result: { stopReason: "end_turn" } });
      out({ id: m.id, error: { code: -32603, message: "second" } });
      out({ id: 99, result: {} });
    } else {
      out({ id: m.id, result: m.method === "session/new" ? { sessionId: "s1" } : {} });
      out({ id: m.id, result: { again: true } });
    }
  }
});
`;

function proxy(s: Scratch, agent: string, extra: string[] = []): ProxyProcess {
  const file = join(s.dir, "agent.js");
  writeFileSync(file, agent);
  const p = startProxy(s, fakeArgs(s, ["--verbose", ...extra]), [BUN, file]);
  track(p);
  return p;
}

async function exchange(p: ProxyProcess, requests: unknown[]): Promise<unknown[]> {
  let out = "";
  p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
  for (const r of requests) p.child.stdin!.write(JSON.stringify(r) + "\n");
  // The agent answers at once; give the proxy time to relay before the client leaves.
  const deadline = Date.now() + 10_000;
  while (!out.includes('"id":99') && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 300));
  p.child.stdin!.end();
  await p.exited;
  return out.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

describe("one answer per request", () => {
  test("a second response to an answered id is swallowed, said on --verbose", async () => {
    const s = scratch();
    const p = proxy(s, TWICE);
    const lines = await exchange(p, [
      { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } },
      { jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } },
      {
        jsonrpc: "2.0",
        id: "p",
        method: "session/prompt",
        params: { sessionId: "s1", prompt: [{ type: "text", text: "x" }] },
      },
    ]);
    const responses = lines.filter((m) => (m as { method?: string }).method === undefined);
    expect(responses).toEqual([
      { jsonrpc: "2.0", id: 0, result: {} },
      { jsonrpc: "2.0", id: 1, result: { sessionId: "s1" } },
      { jsonrpc: "2.0", id: "p", result: { stopReason: "end_turn" } },
      // An id no one asked for answers nothing turnguard knows of: it passes.
      { jsonrpc: "2.0", id: 99, result: {} },
    ]);
    const err = p.stderr();
    for (const id of ["n0", "n1", "sp"]) {
      expect(err).toContain(`dropped the agent's second response to request ${id}`);
    }
  });

  test("a client that reuses an answered id gets the new request's answer", async () => {
    const s = scratch();
    const p = proxy(s, TWICE);
    const lines = await exchange(p, [
      { jsonrpc: "2.0", id: 5, method: "initialize", params: { protocolVersion: 1 } },
      { jsonrpc: "2.0", id: 5, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } },
      {
        jsonrpc: "2.0",
        id: 7,
        method: "session/prompt",
        params: { sessionId: "s1", prompt: [{ type: "text", text: "x" }] },
      },
    ]);
    const fives = lines.filter((m) => (m as { id?: unknown }).id === 5);
    // Both requests under id 5 were in flight or answered in turn: each has one answer.
    expect(fives).toHaveLength(2);
    expect(lines.filter((m) => (m as { id?: unknown }).id === 7)).toHaveLength(1);
  });
});
