/**
 * Turn finishing in the shell: gathers what a turn's end reads that lives outside the
 * turn (its session records after their settle window, the agent's logs, the profile) and
 * runs the linear turn end (lib/proxy/turn_end.ts); gives the bytes the client is sent.
 */
import { errorText } from "../errors.ts";
import { findLogCause, readTurnLogs } from "../cause/log_cause.ts";
import type { ScanResult } from "../cause/scan.ts";
import { ReadBudget } from "../io/bounded_read.ts";
import {
  DEFAULT_SETTLE_MS,
  readSessionRecords,
  type RecordsRead,
} from "../cause/session_records.ts";
import type { ConcludeInput, TurnEnd } from "./conclude.ts";
import type { ProxyState } from "./state.ts";
import { endTurn, type RetryHold, type TurnEndInput, type TurnEndSteps } from "./turn_end.ts";
import { streamed, type Turn } from "./turns.ts";

/** Ends the turns of one proxy. */
export class TurnFinisher {
  constructor(
    readonly state: ProxyState,
    readonly steps: TurnEndSteps,
    readonly retries: RetryHold,
  ) {}

  /**
   * The turn ended (`line`: the agent's response; null when turnguard answers): the bytes
   * to answer the client with, once decided; null when a retry holds the response. Should
   * the turn's end throw (a bug), the client still gets `fallback` (default `line`).
   */
  finish(
    turn: Turn,
    end: TurnEnd,
    line: Uint8Array | null,
    now: number,
    fallback: Uint8Array | null = line,
  ): Promise<Uint8Array | null> {
    // One read budget for everything the turn's end reads of agent-controlled files.
    const budget = new ReadBudget();
    const ended = this.#records(turn, end, budget).then(async (records) =>
      endTurn(
        {
          conclude: this.#concludeInput(
            turn,
            end,
            now,
            records,
            await this.#logs(turn, end, budget),
          ),
          line,
        },
        this.steps,
        this.retries,
        this.state.log,
      )
    );
    return this.#sent(turn, ended, fallback);
  }

  /**
   * The agent's response already went to the client unread (`note` says why): the turn is
   * ended and recorded, never rewritten, published or held.
   */
  forwarded(turn: Turn, end: TurnEnd, note: string, now: number): Promise<Uint8Array | null> {
    const ended = this.#logs(turn, end, new ReadBudget()).then((logs) => {
      const input: TurnEndInput = {
        conclude: this.#concludeInput(turn, end, now, null, logs),
        line: null,
        unread: note,
      };
      return endTurn(input, this.steps, this.retries, this.state.log);
    });
    return this.#sent(turn, ended, null);
  }

  /** The bytes to send; the turn's prompt copy is freed unless a retry holds it. */
  #sent(
    turn: Turn,
    ended: Promise<{ send: Uint8Array | null; held: boolean }>,
    fallback: Uint8Array | null,
  ): Promise<Uint8Array | null> {
    return ended.then(
      (result) => {
        if (!result.held) this.state.turns.releasePrompt(turn);
        return result.send;
      },
      (err) => {
        this.state.turns.releasePrompt(turn);
        this.state.guard.failed("the turn's end", err);
        return fallback;
      },
    );
  }

  /**
   * The turn's session records (docs/EVIDENCE.md): a turn the agent answered, with a result
   * or an error, is decided once its records had the settle window to land; the response
   * waits that long.
   */
  async #records(turn: Turn, end: TurnEnd, budget: ReadBudget): Promise<RecordsRead | null> {
    const taken = turn.records;
    if (!taken || (end.kind !== "result" && end.kind !== "error")) return null;
    const { profile, fs } = this.state.opts;
    await new Promise((resolve) =>
      setTimeout(resolve, profile.recordsSettleMs ?? DEFAULT_SETTLE_MS)
    );
    try {
      return await readSessionRecords(taken, turn.startedAt, budget, fs);
    } catch (err) {
      return { records: [], diagnostics: [`session records: ${errorText(err)}`] };
    }
  }

  /**
   * What the turn appended to the agent's logs, read off the relay's thread before the turn
   * is concluded; null when the conclusion cannot ask for it (needsLogCause in
   * lib/core/decide.ts: a silent turn's timeout, or an answered turn that streamed output).
   */
  async #logs(turn: Turn, end: TurnEnd, budget: ReadBudget): Promise<ScanResult | null> {
    if (
      end.kind === "timeout" || end.kind === "early" ||
      (end.kind === "result" && streamed(turn) > 0)
    ) return null;
    const { profile, fs } = this.state.opts;
    try {
      return await readTurnLogs(profile, turn.snapshot, turn.startedAt, budget, fs);
    } catch (err) {
      return { chunks: [], diagnostics: [`logs: ${errorText(err)}`] };
    }
  }

  /** What concludeTurn reads of this proxy's turn. */
  #concludeInput(
    turn: Turn,
    end: TurnEnd,
    now: number,
    records: RecordsRead | null,
    logs: ScanResult | null,
  ): ConcludeInput {
    const { opts, child } = this.state;
    return {
      turn,
      end,
      agent: opts.profile.name,
      classifier: opts.classifier,
      endedAt: now,
      rewriteErrors: opts.rewriteErrors === true,
      strictTurns: opts.strictTurns === true,
      records,
      readers: opts.readers,
      scanLogs: () =>
        findLogCause({
          snapshot: turn.snapshot,
          scan: logs ?? { chunks: [], diagnostics: ["the turn's logs were not read"] },
          pid: child.pid ?? null,
          profile: opts.profile,
          classifier: opts.classifier,
          now,
        }),
    };
  }
}
