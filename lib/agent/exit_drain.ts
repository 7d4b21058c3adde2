/**
 * After an agent exited, its output is read to the end: one policy for every path that
 * runs an agent (`run` under Bun and Node streams, the proxy under Bun and Node streams).
 * A grandchild the agent left behind may hold the pipes open forever, so once nothing has
 * moved on them for STREAM_GRACE_MS the agent's process group is stopped (whoever holds
 * the pipes goes, and they end), and only when they are still open a grace later are they
 * closed. Never while a stream waits on a slow reader: that data is still on its way, and
 * no byte of it may be lost.
 */
import { killGroup, type Signallable } from "./signals.ts";

/** After the agent exits, how long its stdio may stay open with nothing moving. */
export const STREAM_GRACE_MS = 2000;
/** The second look of an idle check (see drainAfterExit). */
export const IDLE_RECHECK_MS = 50;

/** One output stream of an exited agent, as the drain watches it. */
export interface DrainSource {
  /** When a chunk last moved on it (read from the agent, or taken by its reader). */
  readonly movedAt: number;
  /** Whether its data waits on a slow reader: still on its way, so never cut. */
  readonly busy: boolean;
  /** Closes it (what was read has been handed on). */
  stop(): void;
}

/** What the drain does when the streams stay open with nothing moving. */
export interface DrainPolicy {
  /**
   * The agent whose process group is stopped first, the streams being closed only when
   * still open a grace later; null: close them at once.
   */
  group: Signallable | null;
}

/** Resolves once `ended` did (every source ended), or once the policy closed the sources. */
export async function drainAfterExit(
  sources: readonly DrainSource[],
  ended: Promise<unknown>,
  policy: DrainPolicy,
): Promise<void> {
  const end = ended.then(() => "ended" as const);
  /** The grace starts again once the group was stopped. */
  let since = 0;
  const quiet = () => Math.min(...sources.map((s) => Date.now() - Math.max(s.movedAt, since)));
  const busy = () => sources.some((s) => s.busy);
  const idle = () => !busy() && quiet() >= STREAM_GRACE_MS;
  let stopped = policy.group === null;
  for (;;) {
    const wait = busy() ? STREAM_GRACE_MS : Math.max(1, STREAM_GRACE_MS - quiet());
    if (await endedWithin(end, wait)) return;
    if (!idle()) continue;
    // A starved process runs its due timers before it reads what waits in the pipes: the
    // idle check looks again after one more round of the event loop.
    if (await endedWithin(end, IDLE_RECHECK_MS)) return;
    if (!idle()) continue;
    if (!stopped) {
      stopped = true;
      killGroup(policy.group!, "SIGTERM");
      since = Date.now();
      continue;
    }
    for (const s of sources) s.stop();
    await ended;
    return;
  }
}

/** Whether `end` resolves within `ms` (the timer is cleared either way). */
async function endedWithin(end: Promise<"ended">, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<"idle">((resolve) => (timer = setTimeout(() => resolve("idle"), ms)));
  const which = await Promise.race([end, idle]);
  clearTimeout(timer);
  return which === "ended";
}
