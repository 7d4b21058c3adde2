/**
 * Retries that wait: each runs when its backoff is over, or at once when `turnguard retry`
 * sends SIGUSR1 to the owning process, or never when it is stopped (SIGINT/SIGTERM in run
 * mode, a cancel in proxy mode). Timers and signals are behind small interfaces.
 */
import { timerDelay } from "../io/timer_delay.ts";

/** How a waiting retry ended: its time came, it was asked to run now, or it was stopped. */
export type WaitEnd = "due" | "now" | "stopped";

/** The signal signals a process listens to. */
export interface SignalSource {
  on(signal: NodeJS.Signals, handler: () => void): unknown;
  off(signal: NodeJS.Signals, handler: () => void): unknown;
}

/** The signal `turnguard retry` sends to make waiting retries run now. */
export const RUN_NOW_SIGNAL: NodeJS.Signals = "SIGUSR1";
/** Signals that stop a waiting retry in run mode. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** Sources whose process carries the no-op SIGUSR1 guard (see `guardRunNow`). */
const guarded = new WeakSet<SignalSource>();
const ignore = () => {};

/**
 * Keeps SIGUSR1 from killing the process for the rest of its life. Its default action
 * terminates, and the journal names this process as the owner of its retries: a late
 * `turnguard retry` may arrive after the retries are over (while the outcome is written),
 * and must not kill turnguard then. Installed once per signal source, never removed.
 */
export function guardRunNow(signals: SignalSource): void {
  if (guarded.has(signals)) return;
  guarded.add(signals);
  signals.on(RUN_NOW_SIGNAL, ignore);
}

interface Waiting {
  timer: ReturnType<typeof setTimeout>;
  end: (how: WaitEnd) => void;
}

/** The retries one process holds, by key. */
export class RetryWaits {
  readonly #signals: SignalSource;
  readonly #waiting = new Map<string, Waiting>();

  constructor(signals: SignalSource = process) {
    this.#signals = signals;
  }

  /**
   * Makes SIGUSR1 run the waiting retries until the returned function is called. The
   * process stays guarded against SIGUSR1 after that (`guardRunNow`).
   */
  listen(): () => void {
    guardRunNow(this.#signals);
    const handler = () => void this.runNow();
    this.#signals.on(RUN_NOW_SIGNAL, handler);
    return () => void this.#signals.off(RUN_NOW_SIGNAL, handler);
  }

  /** Waits `afterMs`, then calls `end("due")`; `runNow` and `stop` end it sooner. */
  schedule(key: string, afterMs: number, end: (how: WaitEnd) => void): void {
    guardRunNow(this.#signals);
    this.stop(key);
    const finish = (how: WaitEnd) => {
      const w = this.#waiting.get(key);
      if (!w || w.end !== finish) return;
      clearTimeout(w.timer);
      this.#waiting.delete(key);
      end(how);
    };
    const timer = setTimeout(() => finish("due"), timerDelay(afterMs));
    this.#waiting.set(key, { timer, end: finish });
  }

  /** Runs every waiting retry now; returns how many there were. */
  runNow(): number {
    const all = [...this.#waiting.values()];
    for (const w of all) w.end("now");
    return all.length;
  }

  /** Stops a waiting retry; false when none waited under that key. */
  stop(key: string): boolean {
    const w = this.#waiting.get(key);
    if (!w) return false;
    w.end("stopped");
    return true;
  }

  /** How many retries wait. */
  get size(): number {
    return this.#waiting.size;
  }

  /**
   * Waits for one retry in the foreground (run mode): SIGINT, SIGTERM or SIGHUP stop it.
   */
  waitInForeground(key: string, afterMs: number): Promise<WaitEnd> {
    return new Promise((resolve) => {
      const onStop = () => this.stop(key);
      for (const s of STOP_SIGNALS) this.#signals.on(s, onStop);
      this.schedule(key, afterMs, (how) => {
        for (const s of STOP_SIGNALS) this.#signals.off(s, onStop);
        resolve(how);
      });
    });
  }
}
