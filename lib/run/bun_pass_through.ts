/**
 * The Bun-native pass-through of a print-mode agent: `Bun.spawn` with the agent's output
 * on pipes of turnguard's own, read a bounded read at a time (lib/agent/bun_spawn.ts), and
 * writes straight to turnguard's own descriptors (lib/io/stdio.ts). Under Bun, node:child_process and its
 * streams cost about 5 ms of each `turnguard run`; this path keeps every guarantee of the
 * portable one in lib/run/run.ts (which Deno, and callers with their own streams, use):
 * stdout and stderr pass through byte for byte with backpressure, a reader that goes away
 * stops the copy (the agent meets a closed pipe), the copy lets the event loop turn while
 * the agent floods (lib/io/loop_turn.ts), and the agent's owner (lib/agent/owner.ts)
 * forwards signals and reads its output to the end within its deadline once it exited.
 */
import { bunSpawnAgent } from "../agent/bun_spawn.ts";
import type { ChunkReader } from "../io/chunk_reader.ts";
import type { DrainSource } from "../agent/exit_drain.ts";
import type { AgentOwner } from "../agent/owner.ts";
import type { Signallable } from "../agent/signals.ts";
import { LoopTurn } from "../io/loop_turn.ts";
import type { StdStream } from "../io/stdio.ts";

/** What the pass-through reports while the agent runs. */
export interface PassThroughTaps {
  /** Every stdout chunk, before it is written. */
  stdout(chunk: Uint8Array): void;
  /** Every stderr chunk, before it is written. */
  stderr(chunk: Uint8Array): void;
  /** The reader of stdout went away (EPIPE). */
  readerGone(): void;
  /** The agent started (`run --timeout` arms its deadline on it). */
  spawned?(child: Signallable): void;
}

/** How the agent ended; `error` (and no pid) when it could not be started. */
export interface AgentExit {
  pid: number | undefined;
  code: number | null;
  signal: string | null;
  error?: Error;
}

/** The launch as the pass-through needs it. */
export interface BunLaunch {
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  cwd?: string;
}

/** One stream's copy: busy while it waits on its sink. */
interface Copy extends DrainSource {
  done: Promise<void>;
  busy: boolean;
}

function copy(
  reader: ChunkReader,
  to: StdStream | null,
  tap: (chunk: Uint8Array) => void,
  onBroken: () => void,
): Copy {
  const state: Copy = {
    done: Promise.resolve(),
    busy: false,
    stop: () => reader.cancel(),
  };
  const turn = new LoopTurn();
  state.done = (async () => {
    try {
      for (;;) {
        if (turn.due()) await turn.yield();
        const value = await reader.read();
        if (value === null) return;
        tap(value);
        if (to === null) continue;
        state.busy = true;
        await to.write(value);
        state.busy = false;
        if (to.broken) {
          onBroken();
          state.stop();
          return;
        }
      }
    } catch {
      // The pipe was closed under us (stop): what was read has been passed on.
    }
  })();
  return state;
}

/**
 * Runs the agent with stdin inherited and stdout/stderr copied to `stdout`/`stderr` (null:
 * stdout is only observed, for --outcome-json); resolves once it exited and its output
 * ended (or its owner's deadline closed it).
 */
export async function bunPassThrough(
  launch: BunLaunch,
  owner: AgentOwner,
  detached: boolean,
  stdout: StdStream | null,
  stderr: StdStream,
  taps: PassThroughTaps,
): Promise<AgentExit> {
  const agent = await bunSpawnAgent({
    argv: [launch.command, ...launch.args],
    stdin: "inherit",
    env: owner.env(launch.env),
    cwd: launch.cwd,
    detached,
  });
  if (agent instanceof Error) return { pid: undefined, code: null, signal: null, error: agent };
  const child = agent.child;
  owner.attach(child);
  taps.spawned?.(child);
  let gone = false;
  const readerGone = () => {
    if (!gone) gone = true, taps.readerGone();
  };
  const copies = [
    copy(agent.stdout(), stdout, taps.stdout, readerGone),
    copy(agent.stderr(), stderr, taps.stderr, () => {}),
  ];
  await child.exited;
  await owner.afterExit(copies, Promise.all(copies.map((c) => c.done)));
  return {
    pid: child.pid,
    code: child.signalCode ? null : child.exitCode,
    signal: child.signalCode,
  };
}
