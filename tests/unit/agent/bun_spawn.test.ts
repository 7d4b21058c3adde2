/**
 * lib/agent/bun_spawn.ts: the agent's stdout and stderr come through pipes of turnguard's
 * own, read a bounded read at a time, for `run` (bunPassThrough) and the proxy
 * (startAgent) alike. The runtime's own child streams read a flooding agent ahead without
 * bound: with the slow reader below they hand over 512 KiB at once, and beside CPU burners
 * up to 134 MiB after seconds without a turn of the event loop. Every descriptor turnguard
 * made is closed once the agent and its output ended, or when it could not start.
 */
import { expect, test } from "bun:test";
import { readdirSync, readlinkSync } from "node:fs";
import { bunSpawnAgent } from "../../../lib/agent/bun_spawn.ts";
import { AgentOwner } from "../../../lib/agent/owner.ts";
import { PIPE_READ_BYTES } from "../../../lib/io/chunk_reader.ts";
import { StdStream } from "../../../lib/io/stdio.ts";
import { startAgent } from "../../../lib/proxy/agent_io.ts";
import { bunPassThrough } from "../../../lib/run/bun_pass_through.ts";

const TOTAL = 16 * 1024 * 1024;
/** `head -c TOTAL /dev/zero`: no line ends, so every chunk is handed on whole. */
const FLOOD = { command: "head", args: ["-c", String(TOTAL), "/dev/zero"], env: process.env };

/** A slow reader: the writer keeps the pipe full while it works on a chunk. */
function work(): void {
  const until = performance.now() + 5;
  while (performance.now() < until) { /* working */ }
}

/** The pipes this process holds open. */
function openPipes(): string[] {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith("pipe:");
    } catch {
      return false;
    }
  });
}

/** turnguard's stdout or stderr with a reader that takes a moment for each chunk. */
class SlowStream extends StdStream {
  override write(): Promise<void> {
    return new Promise((done) => setTimeout(done, 1));
  }
}

function owner(): AgentOwner {
  return new AgentOwner({ ownGroup: true, graceMs: 1000, keepDaemons: true, signals: false });
}

test("bunSpawnAgent: a flood reaches a slow reader one bounded read at a time; every pipe closed after", async () => {
  const before = openPipes();
  const agent = await bunSpawnAgent({
    argv: [FLOOD.command, ...FLOOD.args],
    stdin: "pipe",
    env: FLOOD.env,
    detached: true,
  });
  if (agent instanceof Error) throw agent;
  const out = agent.stdout();
  const err = agent.stderr();
  let got = 0;
  let largest = 0;
  for (let chunk = await out.read(); chunk !== null; chunk = await out.read()) {
    got += chunk.length;
    largest = Math.max(largest, chunk.length);
    work();
  }
  expect(await err.read()).toBeNull();
  await agent.child.exited;
  agent.child.stdin.end();
  expect(got).toBe(TOTAL);
  expect(largest).toBeLessThanOrEqual(PIPE_READ_BYTES);
  // The runtime closes the agent's stdin pipe on its own time.
  for (let i = 0; i < 100 && openPipes().length !== before.length; i++) {
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(openPipes()).toEqual(before);
});

test("bunSpawnAgent: a command that cannot start is an error, and leaves no pipe open", async () => {
  const before = openPipes();
  const agent = await bunSpawnAgent({
    argv: ["/nonexistent/agent"],
    stdin: "inherit",
    env: process.env,
    detached: false,
  });
  expect(agent).toBeInstanceOf(Error);
  expect(openPipes()).toEqual(before);
});

test("run's pass-through: the same bounded reads", async () => {
  const o = owner();
  let got = 0;
  let largest = 0;
  const exit = await bunPassThrough(
    FLOOD,
    o,
    true,
    new SlowStream("stdout"),
    new SlowStream("stderr"),
    {
      stdout: (chunk) => {
        got += chunk.length;
        largest = Math.max(largest, chunk.length);
        work();
      },
      stderr: () => {},
      readerGone: () => {},
    },
  );
  await o.end();
  expect(exit.code).toBe(0);
  expect(got).toBe(TOTAL);
  expect(largest).toBeLessThanOrEqual(PIPE_READ_BYTES);
});

test("the proxy's agent: the same bounded reads", async () => {
  const o = owner();
  const agent = await startAgent(FLOOD, o);
  if (agent instanceof Error) throw agent;
  let got = 0;
  let largest = 0;
  agent.stderr.start(() => {});
  await new Promise<void>((done) =>
    agent.stdout.start((chunk) => {
      got += chunk.length;
      largest = Math.max(largest, chunk.length);
      work();
    }, done)
  );
  await agent.exited();
  await o.end();
  expect(got).toBe(TOTAL);
  expect(largest).toBeLessThanOrEqual(PIPE_READ_BYTES);
});
