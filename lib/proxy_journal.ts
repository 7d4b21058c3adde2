/**
 * Proxy turns in the journal: turn hooks for lib/proxy.ts built on the TurnRecorder, and
 * the composition of several hook sets (publish fallback, journal) into one. The proxy
 * calls `turnEnded` before the client's response is forwarded, so the retry decision and
 * the turn's end are in the journal before the client sees the failure.
 */
import { streamed, type Turn } from "./acp/turns.ts";
import type { TurnHooks } from "./proxy.ts";
import type { TurnRecorder } from "./turn_recorder.ts";

/** Whether a turn already reached the client: anything streamed (text, thoughts, tools). */
export function reachedClient(turn: Turn): boolean {
  return streamed(turn) > 0;
}

/** Hooks that journal each proxy turn: its start, its decision and its end. */
export function journalHooks(recorder: TurnRecorder, agent: string): TurnHooks {
  const key = (turn: Turn) => ({ session: turn.sessionId, turn: turn.turn });
  return {
    turnStarted(turn) {
      recorder.started(key(turn), { mode: "proxy", agent, promptId: turn.requestId });
    },
    turnEnded(outcome, turn) {
      recorder.ended(key(turn), 0, outcome, reachedClient(turn));
    },
  };
}

/**
 * One hook set from several, called in order: every `turnStarted` and `turnEnded`, and the
 * `beforeRespond` patches merged one after the other.
 */
export function composeHooks(...sets: TurnHooks[]): TurnHooks {
  const befores = sets.flatMap((s) => (s.beforeRespond ? [s.beforeRespond] : []));
  return {
    turnStarted(turn) {
      for (const s of sets) s.turnStarted?.(turn);
    },
    beforeRespond: befores.length === 0 ? undefined : async (turn, outcome) => {
      let current = outcome;
      for (const before of befores) {
        const patch = await before(turn, current);
        if (patch) current = { ...current, ...patch };
      }
      return current;
    },
    turnEnded(outcome, turn) {
      for (const s of sets) s.turnEnded?.(outcome, turn);
    },
  };
}
