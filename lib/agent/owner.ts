/**
 * The one owner of the agent process, for `run` and the proxy alike: it marks the agent's
 * environment (lib/agent/descendants.ts), forwards the finish signals to the agent's
 * process group and stops it if it lingers (lib/agent/finish.ts, lib/agent/stop.ts), reads
 * its output to the end within a hard deadline once it exited (lib/agent/exit_drain.ts),
 * and on every way out stops whatever is left of it: its process group and the processes
 * that left the group but carry its mark, unless the user keeps those (`--keep-daemons`).
 */
import { markedEnv, markedProcesses, newAgentToken, signalMarked } from "./descendants.ts";
import { drainAfterExit, type DrainSource } from "./exit_drain.ts";
import { grantGrace, onFinish, whenFinishing } from "./finish.ts";
import { type ForwardedSignal, groupAlive, killGroup, type Signallable } from "./signals.ts";
import { stopInStages, type Stopping, type StopTarget } from "./stop.ts";

/** After the agent and its output ended, the grace of what it left running. */
export const LEFTOVER_STOP_GRACE_MS = 2000;

/** How an owner treats its agent. */
export interface OwnerOptions {
  /** The agent leads a process group of its own (spawned `detached`). */
  ownGroup: boolean;
  /** Between SIGTERM and SIGKILL when the agent is stopped (proxy: `--grace`). */
  graceMs: number;
  /** Leave the processes that left the agent's group running (`--keep-daemons`). */
  keepDaemons?: boolean;
  /** Hear the finish signals and forward them (off for in-process tests). */
  signals: boolean;
  /** A finish signal arrived (the turn counts as cancelled). */
  onSignal?: (signal: ForwardedSignal) => void;
  /** `--verbose` lines. */
  log?: (line: string) => void;
}

/** Owns one agent process from before its spawn to after its end. */
export class AgentOwner {
  readonly #opts: OwnerOptions;
  /** The mark of this agent's environment; null when daemons are kept (nothing to find). */
  readonly token: string | null;
  #child: Signallable | null = null;
  #stopping: Stopping | null = null;
  #early: ForwardedSignal[] = [];
  readonly #finishing = whenFinishing();
  readonly #unlisten: () => void;
  readonly #ungrant: () => void;
  readonly #onExit = () => this.#signalAll(this.#hardExit ? "SIGKILL" : "SIGTERM");
  #hardExit = false;
  #ended = false;

  /** Installed before the spawn: a signal that comes while the agent starts is kept for it. */
  constructor(opts: OwnerOptions) {
    this.#opts = opts;
    this.token = opts.keepDaemons ? null : newAgentToken();
    this.#unlisten = opts.signals ? onFinish((signal) => this.#signalled(signal)) : () => {};
    this.#ungrant = opts.signals ? grantGrace(opts.graceMs) : () => {};
    if (!opts.signals) this.#finishing.stop();
  }

  /** The environment the agent starts with (marked with its token). */
  env(base: Record<string, string | undefined>): Record<string, string | undefined> {
    return this.token === null ? base : markedEnv(base, this.token);
  }

  /** Resolves when turnguard is told to finish now (never, without signals). */
  get finishing(): Promise<unknown> {
    return this.#finishing.signal;
  }

  /** The agent started: signals that came while it did are passed on now. */
  attach(child: Signallable): void {
    this.#child = child;
    process.on("exit", this.#onExit);
    for (const signal of this.#early.splice(0)) this.#forward(signal);
  }

  /**
   * Stops the agent: SIGTERM (unless `termSent`), SIGKILL after `graceMs` (default: the
   * owner's grace) if it still runs. One stop at a time: a second call joins the first.
   */
  stop(opts: { graceMs?: number; termSent?: boolean } = {}): Stopping {
    const child = this.#child;
    if (this.#stopping) return this.#stopping;
    const target: StopTarget = {
      alive: () => child !== null && child.exitCode === null && child.signalCode === null,
      signal: (signal) => child && killGroup(child, signal),
    };
    return this.#stopping = stopInStages(target, opts.graceMs ?? this.#opts.graceMs, {
      termSent: opts.termSent,
      log: (line) => this.#opts.log?.(`the agent ${line}`),
    });
  }

  /** The agent exited: its output read to the end, within the deadline (exit_drain.ts). */
  async afterExit(sources: readonly DrainSource[], ended: Promise<unknown>): Promise<void> {
    this.#stopping?.cancel();
    await drainAfterExit(sources, ended, {
      stopLeftovers: (graceMs) => this.#stopLeftovers(graceMs),
      finishNow: this.#finishing.signal,
    });
  }

  /**
   * The end: stops whatever is left of the agent (its group, its marked descendants)
   * and stops listening. Resolves once they are gone (or killed).
   */
  async end(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#stopping?.cancel();
    this.#unlisten();
    this.#ungrant();
    this.#finishing.stop();
    if (this.#leftoversAlive()) await this.#stopLeftovers(LEFTOVER_STOP_GRACE_MS);
    process.off("exit", this.#onExit);
  }

  #signalled(signal: ForwardedSignal): void {
    this.#opts.onSignal?.(signal);
    if (this.#child === null) {
      this.#early.push(signal);
      return;
    }
    this.#forward(signal);
  }

  /** Passes `signal` on to the agent's group, then stops it if it lingers. */
  #forward(signal: ForwardedSignal): void {
    const child = this.#child!;
    // The exit hook then kills: the finish deadline may end turnguard before the grace.
    this.#hardExit = true;
    if (child.exitCode !== null || child.signalCode !== null) return;
    this.#opts.log?.(`forwarded ${signal} to the agent`);
    killGroup(child, signal);
    this.stop({ termSent: true });
  }

  #leftoversAlive(): boolean {
    const child = this.#child;
    if (child === null) return false;
    if (this.#opts.ownGroup && groupAlive(child)) return true;
    return this.token !== null && markedProcesses(this.token).length > 0;
  }

  #signalAll(signal: NodeJS.Signals): void {
    const child = this.#child;
    if (child === null) return;
    // The group when the agent leads one, else the agent alone (killGroup tells).
    killGroup(child, signal);
    if (this.token !== null) signalMarked(this.token, signal);
  }

  #stopLeftovers(graceMs: number): Promise<void> {
    return stopInStages(
      {
        alive: () => this.#leftoversAlive(),
        signal: (signal) => this.#signalAll(signal),
      },
      graceMs,
      { log: (line) => this.#opts.log?.(`what the agent left running ${line}`) },
    ).done;
  }
}
