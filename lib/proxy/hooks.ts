/**
 * The seams of a proxy turn: what features that plug into the proxy (publish fallback,
 * journal, retries, telemetry) implement, and how several are combined into one.
 */
import type { Outcome } from "../core/outcome.ts";
import type { TurnTelemetry } from "../telemetry/export.ts";
import type { Turn } from "./turns.ts";

/**
 * Seams for features that plug into the proxy (publish fallback, journal, retries).
 * `beforeRespond` runs after the turn is decided and before the response is forwarded;
 * the response waits for it, and what it returns is merged into the Outcome. The turn's
 * tool calls (`turn.toolCalls`) are merged only when `beforeRespond` is set: without a
 * reader they are just counted, which keeps long tool results off the parser.
 */
export interface TurnHooks {
  /** A `session/prompt` started a turn. */
  turnStarted?(turn: Turn): void;
  /** The turn is decided; its response is held until this settles. */
  beforeRespond?(turn: Turn, outcome: Outcome): Promise<Partial<Outcome> | void>;
  /** The turn's final Outcome (after beforeRespond). */
  turnEnded?(outcome: Outcome, turn: Turn): void;
}

/** The default: no hooks, so responses are forwarded without waiting. */
export const NO_HOOKS: TurnHooks = {};

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

/** Proxy turn hooks that export every turn's (and retry attempt's) Outcome. */
export function telemetryHooks(telemetry: TurnTelemetry | null): TurnHooks {
  return telemetry ? { turnEnded: (outcome) => telemetry.turnEnded(outcome) } : {};
}
