/**
 * After an agent exited, its output is read to the end — within a hard deadline, the same
 * for every path that runs an agent (`run` and the proxy, under Bun and Node streams). A
 * process the agent left behind may hold its stdout open and write to it forever (a helper
 * writing a line a second): waiting for the stream to go quiet would wait forever. So the
 * streams have EXIT_DEADLINE_MS to end on their own; then whatever is left of the agent is
 * stopped (SIGTERM, SIGKILL after LEFTOVER_GRACE_MS: lib/agent/stop.ts), which closes the
 * pipes it held; what it wrote before is still read, for SETTLE_MS (BUSY_SETTLE_MS while
 * a slow reader is still taking it); then the streams are closed. A finish signal
 * (lib/agent/finish.ts) skips the deadline and the grace, and leaves FINISH_SETTLE_MS for
 * the last bytes: a flooding agent leaves megabytes in the pipe and the runtime's buffer,
 * more than turnguard reads in the second it has to end.
 */

/** After the agent exited, how long its output may stay open before its leftovers are stopped. */
export const EXIT_DEADLINE_MS = 2000;
/** How long the leftovers get between SIGTERM and SIGKILL (after a finish signal: none). */
export const LEFTOVER_GRACE_MS = 2000;
/** After the leftovers were stopped, how long their last bytes may take to be read. */
export const SETTLE_MS = 500;
/** The same while a stream waits on a slow reader: its bytes are still on their way. */
export const BUSY_SETTLE_MS = 5000;
/** The same after a finish signal (turnguard is to end within a second). */
export const FINISH_SETTLE_MS = 200;

/** One output stream of an exited agent, as the drain watches it. */
export interface DrainSource {
  /** Whether its data waits on a slow reader (still on its way). */
  readonly busy: boolean;
  /** Closes it (what was read has been handed on). */
  stop(): void;
}

/** What the drain does when the deadline passes. */
export interface DrainPolicy {
  /** Stops whatever is left of the agent, with this grace before SIGKILL; resolves when done. */
  stopLeftovers(graceMs: number): Promise<void>;
  /** Resolves when turnguard is told to finish now. */
  finishNow: Promise<unknown>;
  /** Overrides EXIT_DEADLINE_MS (tests). */
  deadlineMs?: number;
}

/** Resolves once `ended` did (every source ended), or once the deadline's steps closed them. */
export async function drainAfterExit(
  sources: readonly DrainSource[],
  ended: Promise<unknown>,
  policy: DrainPolicy,
): Promise<void> {
  const end = ended.then(() => "ended" as const);
  let finishing = false;
  const finish = policy.finishNow.then(() => (finishing = true, "finish" as const));
  const first = await within([end, finish], policy.deadlineMs ?? EXIT_DEADLINE_MS);
  if (first === "ended") return;
  let stopped = policy.stopLeftovers(first === "finish" ? 0 : LEFTOVER_GRACE_MS);
  if (first !== "finish") {
    // A finish signal during the grace cuts it short.
    const next = await Promise.race([end, finish, stopped.then(() => "stopped" as const)]);
    if (next === "ended") return;
    if (next === "finish") stopped = policy.stopLeftovers(0);
  }
  if (await Promise.race([end, stopped.then(() => "stopped" as const)]) === "ended") return;
  // The leftovers are gone: the pipes hold only what they wrote before (bounded).
  const settleFrom = Date.now();
  for (;;) {
    // A slow reader gets longer, unless turnguard is told to finish now.
    const busy = !finishing && sources.some((s) => s.busy);
    const settle = finishing ? FINISH_SETTLE_MS : busy ? BUSY_SETTLE_MS : SETTLE_MS;
    const left = settle - (Date.now() - settleFrom);
    if (left <= 0) break;
    if (await within([end], Math.min(left, 100)) === "ended") return;
  }
  for (const s of sources) s.stop();
  await ended;
}

/** The first of `waits` to resolve within `ms`, else "timeout" (the timer is cleared). */
async function within<T extends string>(
  waits: Promise<T>[],
  ms: number,
): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  const first = await Promise.race([...waits, timeout]);
  clearTimeout(timer);
  return first;
}
