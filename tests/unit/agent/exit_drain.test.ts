/**
 * lib/exit_drain.ts, the one policy every agent path uses once the agent exited: output
 * that ends is read to its end; streams held open with nothing moving get the agent's
 * group stopped, then are closed a grace later; a stream waiting on a slow reader is never
 * cut. Fake streams, the real timers (each case waits a grace or two).
 */
import { describe, expect, test } from "bun:test";
import {
  drainAfterExit,
  type DrainSource,
  IDLE_RECHECK_MS,
  STREAM_GRACE_MS,
} from "../../../lib/agent/exit_drain.ts";

/** A stream that ends when `end()` or `stop()` is called; what happened, in order. */
function fakeSource(log: string[], name: string) {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const source: DrainSource & {
    ended: Promise<void>;
    end(): void;
    busy: boolean;
    movedAt: number;
  } = {
    movedAt: Date.now(),
    busy: false,
    stop: () => {
      log.push(`stop ${name}`);
      end();
    },
    ended,
    end,
  };
  return source;
}

/** An exited agent that only records the signals sent to it. */
function fakeAgent(log: string[]) {
  return {
    exitCode: null,
    signalCode: null,
    kill: (signal: string) => void log.push(`kill ${signal}`),
  };
}

describe("drainAfterExit", () => {
  test("streams that end are read to their end: nothing is stopped", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    setTimeout(() => a.end(), 100);
    await drainAfterExit([a], a.ended, { group: fakeAgent(log) });
    expect(log).toEqual([]);
  });

  test(
    "held open and idle: the group is stopped, then a grace later the streams closed",
    async () => {
      const log: string[] = [];
      const a = fakeSource(log, "a");
      const b = fakeSource(log, "b");
      const started = Date.now();
      await drainAfterExit([a, b], Promise.all([a.ended, b.ended]), { group: fakeAgent(log) });
      expect(log).toEqual(["kill SIGTERM", "stop a", "stop b"]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2 * STREAM_GRACE_MS);
    },
    30_000,
  );

  test("with no group to stop, idle streams are closed after one grace", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    const started = Date.now();
    await drainAfterExit([a], a.ended, { group: null });
    expect(log).toEqual(["stop a"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(STREAM_GRACE_MS);
  }, 30_000);

  test("a stream waiting on a slow reader is never cut, however long it waits", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    a.busy = true;
    a.movedAt = 0; // long quiet, but its data is still on its way
    setTimeout(() => a.end(), 2 * STREAM_GRACE_MS + 4 * IDLE_RECHECK_MS);
    await drainAfterExit([a], a.ended, { group: fakeAgent(log) });
    expect(log).toEqual([]);
  }, 30_000);
});
