/**
 * The agent started through `Bun.spawn`, with its stdout and stderr on pipes of turnguard's
 * own read by lib/io/chunk_reader.ts's pipeReader (bounded reads, each a turn of the event
 * loop) rather than the runtime's child streams, which read a flooding agent's output ahead
 * without bound on the main thread. Shared by `run`'s pass-through and the proxy. Where the
 * C library cannot make a pipe (lib/io/libc.ts), the runtime's streams are used.
 */
import { bun, type BunSubprocess } from "../io/bun_api.ts";
import { type ChunkReader, pipeReader, streamReader } from "../io/chunk_reader.ts";
import { libc } from "../io/libc.ts";
import { closeQuietly } from "../io/private_file.ts";

/** How the agent is started. */
export interface BunAgentLaunch {
  argv: string[];
  /** "pipe": turnguard writes the agent's stdin; "inherit": the agent reads turnguard's. */
  stdin: "pipe" | "inherit";
  env: Record<string, string | undefined>;
  cwd?: string;
  /** A process group (and session) of its own. */
  detached: boolean;
}

/** A started agent and its two output streams, each opened once by whoever reads it. */
export interface BunAgent {
  child: BunSubprocess;
  stdout(): ChunkReader;
  stderr(): ChunkReader;
}

type Pipe = { read: number; write: number };

/** Starts the agent; the error `Bun.spawn` threw when it could not. */
export async function bunSpawnAgent(launch: BunAgentLaunch): Promise<BunAgent | Error> {
  const c = await libc();
  const out = c?.pipe() ?? null;
  const err = out ? c?.pipe() ?? null : null;
  const pipes: { out: Pipe; err: Pipe } | null = out && err ? { out, err } : null;
  if (out && !pipes) closeQuietly(out.read, out.write);
  let child: BunSubprocess;
  try {
    child = bun!.spawn(launch.argv, {
      stdin: launch.stdin,
      stdout: pipes ? pipes.out.write : "pipe",
      stderr: pipes ? pipes.err.write : "pipe",
      env: launch.env,
      cwd: launch.cwd,
      detached: launch.detached,
    });
  } catch (error) {
    if (pipes) closeQuietly(pipes.out.read, pipes.out.write, pipes.err.read, pipes.err.write);
    return error as Error;
  }
  // The agent has its copies of the write ends: each pipe ends when the agent, and
  // whatever it started that holds one, closed it.
  if (pipes) closeQuietly(pipes.out.write, pipes.err.write);
  return {
    child,
    stdout: () => pipes ? pipeReader(pipes.out.read) : streamReader(child.stdout),
    stderr: () => pipes ? pipeReader(pipes.err.read) : streamReader(child.stderr),
  };
}
