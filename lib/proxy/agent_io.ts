/**
 * The proxy's byte plumbing: the agent process and the client's streams as the proxy's
 * pump reads and writes them. Under Bun the agent runs through `Bun.spawn`, its output
 * read from pipes of turnguard's own a bounded read at a time (lib/agent/bun_spawn.ts), and
 * the client's side is read from `Bun.stdin.stream()` and written to turnguard's stdout
 * descriptor (lib/io/stdio.ts): node:child_process and Node streams cost the proxy a fifth of
 * its time per byte. Elsewhere (Deno from source), and for callers with streams of their
 * own, the portable Node path is used. Both keep the same guarantees: every byte in order,
 * backpressure (a source is paused while its sink is full), the agent in a process group
 * of its own under its owner (lib/agent/owner.ts: its output read to the end within a
 * deadline once it exited), and reading loops that let the event loop turn while a side
 * floods (lib/io/loop_turn.ts), so that timers and signal handlers always run.
 */
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { bun, type BunSubprocess } from "../io/bun_api.ts";
import { bunSpawnAgent } from "../agent/bun_spawn.ts";
import { type ChunkReader, streamReader } from "../io/chunk_reader.ts";
import { waitForExit } from "../agent/node_child.ts";
import type { DrainSource } from "../agent/exit_drain.ts";
import type { AgentOwner } from "../agent/owner.ts";
import type { Signallable } from "../agent/signals.ts";
import type { StdStream } from "../io/stdio.ts";
import { LoopTurn } from "../io/loop_turn.ts";
import { type Libc, libc } from "../io/libc.ts";
import type { WireTap } from "../record/recorder.ts";

/** A stream of bytes the proxy reads, paused while what it feeds is full. */
export interface ByteSource {
  /** Starts reading: chunks go to `onData`; `onEnd` once when the stream ends or fails. */
  start(onData: (chunk: Uint8Array) => void, onEnd?: () => void): void;
  pause(): void;
  resume(): void;
  /** Stops reading for good. */
  stop(): void;
  /**
   * Calls `onHangUp` when the writer of the stream hangs up while reading it is paused
   * (so not seen as its end): where the runtime can tell (lib/io/libc.ts).
   */
  watchHangUp?(onHangUp: () => void): void;
}

/**
 * Where one direction's bytes go (the proxy's LineOutput writes to it). A Node Writable is
 * one: `write` says false while the sink is full, `drain` when it took everything, `error`
 * when its reader is gone.
 */
export interface ByteSink {
  write(bytes: Uint8Array): boolean;
  /** Writes several pieces at once, in order (one system call where it can); as `write`. */
  writev?(parts: readonly Uint8Array[]): boolean;
  end(): void;
  on(event: "drain" | "error", listener: () => void): unknown;
}

/** How the agent ended. */
export interface AgentExit {
  code: number | null;
  signal: string | null;
}

/** The agent as the proxy drives it. */
export interface AgentProcess extends Signallable {
  readonly stdin: ByteSink;
  readonly stdout: ByteSource;
  readonly stderr: ByteSource;
  /** Resolves once it exited and its output was read to the end (see the module doc). */
  exited(): Promise<AgentExit>;
}

/** The launch as the proxy gives it. */
export interface AgentCommand {
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  cwd?: string;
  /** `proxy --record`: sees the agent's stdout and stderr chunks before the proxy does. */
  wireTap?: WireTap;
}

/**
 * Starts the agent in a process group of its own; resolves once it runs, or with the
 * error that kept it from starting. Bun-native under Bun, else node:child_process.
 */
export async function startAgent(
  launch: AgentCommand,
  owner: AgentOwner,
): Promise<AgentProcess | Error> {
  // The compiled binary starts with the JIT held back (`--compile-jit-policy` in the
  // Makefile): a start-up's code runs once and is not worth compiling. The proxy's per-line
  // work runs millions of times: from here on the JIT compiles as usual.
  bun?.unsafe?.setJITPolicy?.(1);
  const child = bun ? await startBunAgent(launch, owner) : await startNodeAgent(launch, owner);
  if (!(child instanceof Error)) owner.attach(child);
  return child;
}

/**
 * `source` with `onChunk` told each chunk before its reader, and `onEnd` its end (the
 * recorder of `proxy --record` tees the wire here).
 */
export function tappedSource(
  source: ByteSource,
  onChunk: (chunk: Uint8Array) => void,
  onEnd: () => void = () => {},
): ByteSource {
  return {
    start(onData, end = () => {}) {
      source.start((chunk) => {
        onChunk(chunk);
        onData(chunk);
      }, () => {
        onEnd();
        end();
      });
    },
    pause: () => source.pause(),
    resume: () => source.resume(),
    stop: () => source.stop(),
    ...(source.watchHangUp ? { watchHangUp: (f: () => void) => source.watchHangUp!(f) } : {}),
  };
}

/** The agent's stdout and stderr, teed to `tap` when there is one. */
function agentSources(
  stdout: ByteSource,
  stderr: ByteSource,
  tap: WireTap | undefined,
): { stdout: ByteSource; stderr: ByteSource } {
  if (!tap) return { stdout, stderr };
  return {
    stdout: tappedSource(stdout, (c) => tap.fromAgent(c)),
    stderr: tappedSource(stderr, (c) => tap.agentStderr(c)),
  };
}

// ---------------------------------------------------------------- the portable path

/**
 * The client's input as a ByteSource: a Node Readable is wrapped. Told apart by shape, not
 * by a `start` key, which an fs.ReadStream (stdin redirected from a file) has as a number.
 */
export function byteSource(input: Readable | ByteSource): ByteSource {
  return isNodeReadable(input) ? nodeSource(input) : input;
}

function isNodeReadable(input: Readable | ByteSource): input is Readable {
  return typeof (input as Readable).pipe === "function";
}

/** A Node Readable as a ByteSource. */
export function nodeSource(stream: Readable): ByteSource {
  let listeners: [(chunk: Uint8Array) => void, () => void] | null = null;
  return {
    start(onData, onEnd = () => {}) {
      listeners = [onData, onEnd];
      stream.on("data", onData);
      stream.once("end", onEnd);
      stream.on("error", onEnd);
    },
    pause: () => void stream.pause(),
    resume: () => void stream.resume(),
    stop() {
      if (listeners) {
        stream.off("data", listeners[0]);
        stream.off("end", listeners[1]);
      }
      stream.pause();
    },
  };
}

async function startNodeAgent(
  launch: AgentCommand,
  owner: AgentOwner,
): Promise<AgentProcess | Error> {
  let child;
  try {
    child = spawn(launch.command, launch.args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: owner.env(launch.env) as NodeJS.ProcessEnv,
      cwd: launch.cwd,
      detached: true,
    });
  } catch (err) {
    return err as Error;
  }
  const started = await new Promise<Error | null>((resolve) => {
    child.once("spawn", () => resolve(null));
    child.once("error", (err) => resolve(child.pid === undefined ? err : null));
  });
  if (started) return started;
  const exited = waitForExit(child, owner);
  child.stdin!.on("error", () => {}); // the agent closed its stdin or died
  return {
    get pid() {
      return child.pid;
    },
    get exitCode() {
      return child.exitCode;
    },
    get signalCode() {
      return child.signalCode;
    },
    kill: (signal) => child.kill(signal),
    stdin: child.stdin!,
    ...agentSources(nodeSource(child.stdout!), nodeSource(child.stderr!), launch.wireTap),
    exited: async () => {
      const { code, signal } = await exited;
      return { code, signal };
    },
  };
}

// ---------------------------------------------------------------- the Bun-native path

/**
 * A stream (lib/io/chunk_reader.ts) read in a loop, paused by holding the next read back;
 * each chunk is handed on in pieces of bounded cost, cut after a line's end, so that the
 * event loop turns while a side floods (lib/io/loop_turn.ts).
 */
export class StreamSource implements ByteSource, DrainSource {
  #reader: ChunkReader | null = null;
  #gate: Promise<void> | null = null;
  #open: (() => void) | null = null;
  #stopped = false;
  #hangUp: { fd: number; libc: Libc; listener: () => void } | null = null;
  #hangUpTimer: ReturnType<typeof setInterval> | undefined;
  /** Resolves once the stream ended (or was stopped). */
  done: Promise<void> = Promise.resolve();

  /** `open`: the stream; `fd`: the descriptor it reads, when its hang-up can be watched. */
  constructor(
    readonly open: () => ChunkReader,
    readonly fd: number | null = null,
  ) {}

  watchHangUp(onHangUp: () => void): void {
    const fd = this.fd;
    if (fd === null) return;
    void libc().then((c) => {
      if (c !== null) this.#hangUp = { fd, libc: c, listener: onHangUp };
      if (this.#gate !== null) this.#watch();
    });
  }

  /** While paused, looks every HANG_UP_POLL_MS whether the writer hung up. */
  #watch(): void {
    const hangUp = this.#hangUp;
    if (hangUp === null || this.#hangUpTimer !== undefined) return;
    this.#hangUpTimer = setInterval(() => {
      if (!hangUp.libc.hungUp(hangUp.fd)) return;
      this.#unwatch();
      this.#hangUp = null;
      hangUp.listener();
    }, HANG_UP_POLL_MS);
  }

  #unwatch(): void {
    clearInterval(this.#hangUpTimer);
    this.#hangUpTimer = undefined;
  }

  /** Whether the next read is held back (its reader is slow). */
  get busy(): boolean {
    return this.#gate !== null;
  }

  start(onData: (chunk: Uint8Array) => void, onEnd: () => void = () => {}): void {
    const reader = this.#reader = this.open();
    const turn = new LoopTurn();
    this.done = (async () => {
      try {
        reading: while (!this.#stopped) {
          if (turn.due()) await turn.yield();
          if (this.#gate) await this.#gate;
          if (this.#stopped) break;
          const value = await reader.read();
          if (value === null) break;
          // The chunk in pieces of bounded cost, each cut after a line's end, with the
          // event loop's turn and the reader's pace kept between them (lib/io/loop_turn.ts).
          for (let at = 0; at < value.length;) {
            if (at > 0) {
              if (turn.due()) await turn.yield();
              if (this.#gate) await this.#gate;
              if (this.#stopped) break reading;
            }
            const end = turn.pieceEnd(value, at);
            const t0 = performance.now();
            onData(at === 0 && end === value.length ? value : value.subarray(at, end));
            turn.spent(end - at, performance.now() - t0);
            at = end;
          }
        }
      } catch {
        // The pipe failed or was cancelled (stop): what was read has been handed on.
      }
      onEnd();
    })();
  }

  pause(): void {
    if (this.#gate === null) this.#gate = new Promise((open) => (this.#open = open));
    this.#watch();
  }

  resume(): void {
    this.#unwatch();
    const open = this.#open;
    this.#gate = this.#open = null;
    open?.();
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#hangUp = null;
    this.resume();
    this.#reader?.cancel();
  }
}

/** turnguard's stdin, Bun-native (descriptor 0: its hang-up can be watched). */
export function bunStdin(): ByteSource {
  return new StreamSource(() => streamReader(bun!.stdin.stream()), 0);
}

/** While the client's input is paused, how often its hang-up is looked for. */
const HANG_UP_POLL_MS = 200;

/** Bytes queued on a StdStream above which its ByteSink says it is full. */
const SINK_FULL_BYTES = 1024 * 1024;

/**
 * turnguard's stdout (or stderr) as a ByteSink: writes go to the descriptor in order
 * through the StdStream's queue (so `stdioIdle` waits for them too).
 */
export function stdSink(std: StdStream): ByteSink {
  return new StdSink(std);
}

/** Listeners of `drain` and `error`, as a Node Writable calls them. */
class SinkEvents {
  #drain: (() => void)[] = [];
  #error: (() => void)[] = [];
  on(event: "drain" | "error", listener: () => void): this {
    (event === "drain" ? this.#drain : this.#error).push(listener);
    return this;
  }
  protected emit(event: "drain" | "error"): void {
    for (const listener of event === "drain" ? this.#drain : this.#error) listener();
  }
}

class StdSink extends SinkEvents implements ByteSink {
  #queued = 0;
  #full = false;
  #failed = false;
  constructor(readonly std: StdStream) {
    super();
  }
  write(bytes: Uint8Array): boolean {
    return this.writev([bytes]);
  }
  writev(parts: readonly Uint8Array[]): boolean {
    if (this.#failed) return true;
    const queued = this.std.writeParts(parts);
    if (queued === undefined) return !this.#full;
    let bytes = 0;
    for (const part of parts) bytes += part.length;
    this.#queued += bytes;
    void queued.then(() => {
      this.#queued -= bytes;
      if (this.std.broken) {
        if (!this.#failed) this.#failed = true, this.emit("error");
      } else if (this.#full && this.#queued === 0) {
        this.#full = false;
        this.emit("drain");
      }
    });
    if (this.#queued > SINK_FULL_BYTES) this.#full = true;
    return !this.#full;
  }
  end(): void {}
}

/**
 * A Bun FileSink (the agent's stdin) as a ByteSink: each write is flushed at once; a
 * flush the pipe does not take whole is waited on (the sink is full until it settles).
 */
class FileSinkWriter extends SinkEvents implements ByteSink {
  #pending = 0;
  #failed = false;
  constructor(readonly sink: BunSubprocess["stdin"]) {
    super();
  }
  write(bytes: Uint8Array): boolean {
    if (this.#failed) return true;
    let flushed;
    try {
      this.sink.write(bytes);
      flushed = this.sink.flush();
    } catch {
      this.#fail();
      return true;
    }
    if (typeof flushed === "number") return this.#pending === 0;
    this.#pending++;
    flushed.then(() => {
      if (--this.#pending === 0 && !this.#failed) this.emit("drain");
    }, () => this.#fail());
    return false;
  }
  end(): void {
    if (this.#failed) return;
    try {
      const ended = this.sink.end();
      if (typeof ended !== "number") ended.catch(() => {});
    } catch { /* the agent is gone */ }
  }
  #fail(): void {
    if (this.#failed) return;
    this.#failed = true;
    this.emit("error");
  }
}

async function startBunAgent(
  launch: AgentCommand,
  owner: AgentOwner,
): Promise<AgentProcess | Error> {
  const agent = await bunSpawnAgent({
    argv: [launch.command, ...launch.args],
    stdin: "pipe",
    env: owner.env(launch.env),
    cwd: launch.cwd,
    detached: true,
  });
  if (agent instanceof Error) return agent;
  const child = agent.child;
  const stdout = new StreamSource(agent.stdout);
  const stderr = new StreamSource(agent.stderr);
  return {
    pid: child.pid,
    get exitCode() {
      return child.signalCode ? null : child.exitCode;
    },
    get signalCode() {
      return child.signalCode;
    },
    kill: (signal) => child.kill(signal),
    stdin: new FileSinkWriter(child.stdin),
    ...agentSources(stdout, stderr, launch.wireTap),
    exited: async () => {
      await child.exited;
      await owner.afterExit([stdout, stderr], Promise.all([stdout.done, stderr.done]));
      return { code: child.signalCode ? null : child.exitCode, signal: child.signalCode };
    },
  };
}
