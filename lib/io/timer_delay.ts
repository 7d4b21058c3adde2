/**
 * The longest wait a timer can take. `setTimeout` with a delay above 2^31-1 ms fires after
 * 1 ms in every runtime: a grace of "forever" would end at once. Every long wait goes
 * through `timerDelay`.
 */

/** setTimeout cannot wait longer than this (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay a timer honours: `ms` clamped to [0, MAX_TIMER_MS] (NaN: 0). */
export function timerDelay(ms: number): number {
  return ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms > 0 ? ms : 0;
}
