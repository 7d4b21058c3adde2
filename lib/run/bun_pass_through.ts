/**
 * The Bun-native pass-through of a print-mode agent: `Bun.spawn` and writes straight to
 * turnguard's own descriptors (lib/io/stdio.ts). Under Bun, node:child_process and its
 * streams cost about 5 ms of each `turnguard run`; this path keeps every guarantee of the
 * portable one in lib/run/run.ts (which Deno, and callers with their own streams, use):
 * stdout and stderr pass through byte for byte with backpressure, a reader that goes away
 * stops the copy (the agent meets a closed pipe), signals are forwarded, and once the agent
 * exited its output is read to the end, unless a grandchild holds the pipes open with
 * nothing moving and no write waiting on a slow reader (lib/exit_drain.ts).
 */
import { bun, type BunSubprocess } from "../io/bun_api.ts";
import { drainAfterExit, type DrainSource } from "../agent/exit_drain.ts";
import {
  forwardSignalsFromSpawn,
  ownGroup,
  type Signallable,
  stopGroupOnExit,
} from "../agent/signals.ts";
import type { StdStream } from "../io/stdio.ts";

/** What the pass-through reports while the agent runs. */
export interface PassThroughTaps {
  /** Every stdout chunk, before it is written. */
  stdout(chunk: Uint8Array): void;
  /** Every stderr chunk, before it is written. */
  stderr(chunk: Uint8Array): void;
  /** The reader of stdout went away (EPIPE). */
  readerGone(): void;
  /** A forwarded signal arrived (the turn counts as cancelled). */
  signalled(): void;
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

/** One stream's copy: busy while it waits on its sink; when it last moved. */
interface Copy extends DrainSource {
  done: Promise<void>;
  busy: boolean;
  movedAt: number;
}

function copy(
  from: ReadableStream<Uint8Array>,
  to: StdStream | null,
  tap: (chunk: Uint8Array) => void,
  onBroken: () => void,
): Copy {
  const reader = from.getReader();
  const state: Copy = {
    done: Promise.resolve(),
    busy: false,
    movedAt: Date.now(),
    stop: () => void reader.cancel().catch(() => {}),
  };
  state.done = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        state.movedAt = Date.now();
        tap(value);
        if (to === null) continue;
        state.busy = true;
        await to.write(value);
        state.busy = false;
        state.movedAt = Date.now();
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
 * ended.
 */
export async function bunPassThrough(
  launch: BunLaunch,
  stdout: StdStream | null,
  stderr: StdStream,
  taps: PassThroughTaps,
): Promise<AgentExit> {
  let child: BunSubprocess;
  const detached = ownGroup();
  // Installed before the spawn: a signal that comes while the agent starts is passed on
  // to it, instead of killing turnguard and leaving the agent behind.
  const forwarding = forwardSignalsFromSpawn(() => taps.signalled());
  try {
    child = bun!.spawn([launch.command, ...launch.args], {
      stdin: "inherit",
      stdout: "pipe",
      stderr: "pipe",
      env: launch.env,
      cwd: launch.cwd,
      detached,
    });
  } catch (err) {
    forwarding.stop();
    return { pid: undefined, code: null, signal: null, error: err as Error };
  }
  forwarding.attach(child);
  taps.spawned?.(child);
  const stopGroup = stopGroupOnExit(child);
  let gone = false;
  const readerGone = () => {
    if (!gone) gone = true, taps.readerGone();
  };
  const copies = [
    copy(child.stdout, stdout, taps.stdout, readerGone),
    copy(child.stderr, stderr, taps.stderr, () => {}),
  ];
  await child.exited;
  // An agent in the terminal's group has no group of its own to stop.
  await drainAfterExit(copies, Promise.all(copies.map((c) => c.done)), {
    group: detached ? child : null,
  });
  forwarding.stop();
  stopGroup();
  return {
    pid: child.pid,
    code: child.signalCode ? null : child.exitCode,
    signal: child.signalCode,
  };
}
