/**
 * lib/agent/exit_drain.ts, the one policy every agent path uses once the agent exited:
 * output that ends is read to its end; output held open past the deadline — however much
 * still moves on it — gets the leftovers stopped, then the streams closed; a finish
 * signal skips the deadline. Fake streams, real timers with short deadlines.
 */
import { describe, expect, test } from "bun:test";
import {
  BUSY_SETTLE_MS,
  drainAfterExit,
  type DrainSource,
  SETTLE_MS,
} from "../../../lib/agent/exit_drain.ts";

/** A stream that ends when `end()` or `stop()` is called; what happened, in order. */
function fakeSource(log: string[], name: string) {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const source: DrainSource & { ended: Promise<void>; end(): void; busy: boolean } = {
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

/** A policy that records the stops it was asked for. */
function policy(log: string[], finishNow: Promise<unknown> = new Promise(() => {})) {
  return {
    stopLeftovers: (graceMs: number) => {
      log.push(`stop leftovers, grace ${graceMs}`);
      return Promise.resolve();
    },
    finishNow,
    deadlineMs: 300,
  };
}

describe("drainAfterExit", () => {
  test("streams that end are read to their end: nothing is stopped", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    setTimeout(() => a.end(), 100);
    await drainAfterExit([a], a.ended, policy(log));
    expect(log).toEqual([]);
  });

  test("held open past the deadline: the leftovers are stopped, then the streams closed", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    const b = fakeSource(log, "b");
    const started = Date.now();
    await drainAfterExit([a, b], Promise.all([a.ended, b.ended]), policy(log));
    expect(log).toEqual(["stop leftovers, grace 2000", "stop a", "stop b"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300 + SETTLE_MS - 20);
  });

  test("leftovers whose stop closes the streams: nothing is cut", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    await drainAfterExit([a], a.ended, {
      ...policy(log),
      stopLeftovers: () => {
        log.push("stop leftovers");
        a.end();
        return new Promise(() => {});
      },
    });
    expect(log).toEqual(["stop leftovers"]);
  });

  test("a finish signal skips the deadline and the grace", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    const started = Date.now();
    await drainAfterExit([a], a.ended, {
      ...policy(log, Promise.resolve()),
      deadlineMs: 60_000,
    });
    expect(log).toEqual(["stop leftovers, grace 0", "stop a"]);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test("a finish signal during the leftovers' grace cuts it short", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    let finish!: () => void;
    const finishNow = new Promise<void>((resolve) => (finish = resolve));
    await drainAfterExit([a], a.ended, {
      stopLeftovers: (graceMs) => {
        log.push(`stop leftovers, grace ${graceMs}`);
        if (graceMs === 0) return Promise.resolve();
        setTimeout(finish, 50);
        return new Promise(() => {});
      },
      finishNow,
      deadlineMs: 100,
    });
    expect(log).toEqual(["stop leftovers, grace 2000", "stop leftovers, grace 0", "stop a"]);
  });

  test("a stream waiting on a slow reader gets longer to settle, not for ever", async () => {
    const log: string[] = [];
    const a = fakeSource(log, "a");
    a.busy = true;
    setTimeout(() => a.end(), 300 + SETTLE_MS + 300);
    await drainAfterExit([a], a.ended, policy(log));
    // Ended by itself within BUSY_SETTLE_MS: not cut.
    expect(log).toEqual(["stop leftovers, grace 2000"]);
    const b = fakeSource(log, "b");
    b.busy = true;
    const started = Date.now();
    await drainAfterExit([b], b.ended, policy(log));
    expect(log.at(-1)).toBe("stop b");
    expect(Date.now() - started).toBeLessThan(300 + BUSY_SETTLE_MS + 2000);
  }, 30_000);
});
