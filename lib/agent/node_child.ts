/**
 * The agent as node:child_process runs it (Deno, and callers with streams of their own):
 * its exit, then its output read to the end under its owner's deadline.
 */
import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import type { DrainSource } from "./exit_drain.ts";
import type { AgentOwner } from "./owner.ts";

/** How a node child ended; `error` (and no pid) when it could not be started. */
export interface NodeExit {
  code: number | null;
  signal: string | null;
  error?: Error;
}

/** Waits for the agent to exit, then for its output streams to end (owner.afterExit). */
export function waitForExit(child: ChildProcess, owner: AgentOwner): Promise<NodeExit> {
  return new Promise((resolve) => {
    child.once("error", (err) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, error: err });
    });
    child.once("exit", async (code, signal) => {
      const streams = [child.stdout, child.stderr].filter((s): s is Readable =>
        s !== null && !s.readableEnded && !s.destroyed
      );
      const sources = streams.map(nodeDrainSource);
      await owner.afterExit(sources, Promise.all(sources.map((s) => s.closed)));
      for (const s of sources) s.stream.destroy();
      resolve({ code, signal });
    });
  });
}

/** A Node Readable as the drain watches it: busy while paused (its reader is slow). */
function nodeDrainSource(stream: Readable): DrainSource & {
  stream: Readable;
  closed: Promise<void>;
} {
  return {
    stream,
    get busy() {
      return stream.isPaused();
    },
    stop: () => void stream.destroy(),
    closed: new Promise<void>((resolve) => stream.once("close", () => resolve())),
  };
}
