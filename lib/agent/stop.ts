/**
 * How turnguard stops processes: SIGTERM, then SIGKILL once a grace has passed and they
 * still run — the way timeout(1) --kill-after and `docker stop` do. The one place this is
 * written: `run --timeout`, the proxy's grace after the client left, a signal turnguard
 * forwarded to an agent that ignores it, and whatever is left after the agent exited all
 * go through `stopInStages`.
 */
import { timerDelay } from "../io/timer_delay.ts";

/** What a staged stop signals: the agent's group, or everything left of it. */
export interface StopTarget {
  /** Whether any of it still runs. */
  alive(): boolean;
  /** Sends `signal` to all of it (never throws). */
  signal(signal: NodeJS.Signals): void;
}

/** A stop under way. */
export interface Stopping {
  /** Resolves once nothing of the target runs, or shortly after the SIGKILL. */
  readonly done: Promise<void>;
  /** Whether it came to SIGKILL. */
  killed(): boolean;
  /** Stops the stop (the target ended on its own terms): no more signals. */
  cancel(): void;
}

/** How often a stop looks whether its target still runs. */
export const STOP_POLL_MS = 50;
/** After SIGKILL, how long a stop waits for its target to be gone before it resolves. */
export const KILL_SETTLE_MS = 1000;

/**
 * Stops `target`: SIGTERM now (unless `termSent`: a forwarded signal took its place),
 * SIGKILL once `graceMs` passed and it still runs. `log` hears of each escalation.
 */
export function stopInStages(
  target: StopTarget,
  graceMs: number,
  opts: { termSent?: boolean; log?: (line: string) => void } = {},
): Stopping {
  let cancelled = false;
  let killed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const end = () => {
    clearTimeout(timer);
    finish();
  };
  if (!opts.termSent) target.signal("SIGTERM");
  const started = Date.now();
  const look = () => {
    if (cancelled) return end();
    if (!target.alive()) return end();
    const waited = Date.now() - started;
    if (!killed && waited >= graceMs) {
      killed = true;
      opts.log?.("ignored SIGTERM; sending SIGKILL");
      target.signal("SIGKILL");
    }
    if (killed && waited >= graceMs + KILL_SETTLE_MS) return end();
    const next = killed ? STOP_POLL_MS : Math.min(STOP_POLL_MS, graceMs - waited);
    timer = setTimeout(look, timerDelay(Math.max(1, next)));
  };
  timer = setTimeout(look, timerDelay(Math.min(STOP_POLL_MS, Math.max(1, graceMs))));
  return {
    done,
    killed: () => killed,
    cancel: () => {
      cancelled = true;
      end();
    },
  };
}
