/**
 * lib/agent/stop.ts: the one "SIGTERM, then SIGKILL after the grace", on real processes.
 */
import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { stopInStages, type StopTarget } from "../../../lib/agent/stop.ts";

/** A real process as a stop target, and the signals it was sent. */
function target(script: string) {
  const child = spawn("sh", ["-c", script], { stdio: "ignore" });
  const sent: string[] = [];
  const exited = new Promise<string | null>((res) => child.once("exit", (_c, s) => res(s)));
  const t: StopTarget = {
    alive: () => child.exitCode === null && child.signalCode === null,
    signal: (signal) => {
      sent.push(signal);
      child.kill(signal);
    },
  };
  return { t, sent, exited };
}

describe("stopInStages", () => {
  test("a process that obeys SIGTERM gets nothing more", async () => {
    const { t, sent, exited } = target("sleep 100");
    const stopping = stopInStages(t, 2000);
    expect(await exited).toBe("SIGTERM");
    await stopping.done;
    expect(sent).toEqual(["SIGTERM"]);
    expect(stopping.killed()).toBe(false);
  });

  test("one that ignores SIGTERM gets SIGKILL after the grace", async () => {
    const { t, sent, exited } = target("trap '' TERM; while :; do sleep 0.05; done");
    await new Promise((r) => setTimeout(r, 200)); // the trap is set
    const log: string[] = [];
    const started = Date.now();
    const stopping = stopInStages(t, 300, { log: (l) => log.push(l) });
    expect(await exited).toBe("SIGKILL");
    await stopping.done;
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(sent).toEqual(["SIGTERM", "SIGKILL"]);
    expect(log).toEqual(["ignored SIGTERM; sending SIGKILL"]);
  });

  test("termSent: a forwarded signal took SIGTERM's place; cancel stops the stop", async () => {
    const { t, sent, exited } = target("trap '' TERM; while :; do sleep 0.05; done");
    const stopping = stopInStages(t, 200, { termSent: true });
    stopping.cancel();
    await stopping.done;
    await new Promise((r) => setTimeout(r, 400));
    expect(sent).toEqual([]);
    t.signal("SIGKILL");
    expect(await exited).toBe("SIGKILL");
  });
});
