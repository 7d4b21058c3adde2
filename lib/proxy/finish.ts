/**
 * Turn finishing in the shell: gathers what a turn's end reads that lives outside the
 * turn (its session records once their end record is there — or after their settle window,
 * for readers that show no end — the agent's logs, the profile) and runs the linear turn
 * end (lib/proxy/turn_end.ts); gives the bytes the client is sent, with a recovered reply
 * before them (`--recover-replies`). Records whose end lands past the wait are watched on,
 * and the journal gets the turn's revised Outcome.
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
import {
  DEFAULT_WAIT_MS,
  LATE_POLL_MS,
  LATE_WATCH_MS,
  readersShowEnd,
  type RecordsWaited,
  turnRecords,
  waitForEnd,
} from "../cause/records_wait.ts";
import { type PluginLedger, pluginLedger, withPluginBudget } from "../plugin/budget.ts";
import { type ConcludeInput, concludeTurn, type TurnEnd } from "./conclude.ts";
import type { ProxyState } from "./state.ts";
import {
  endTurn,
  type RetryHold,
  type TurnEndInput,
  type TurnEndResult,
  type TurnEndSteps,
} from "./turn_end.ts";
import { revisedOutcome } from "./revision.ts";
import { streamed, type Turn, turnText } from "./turns.ts";
import { recoveredRest } from "./beyond_wire.ts";
import { lineEnding } from "../acp/lines.ts";

/**
 * The most sessions whose records are watched late at once (lib/cause/records_wait.ts
 * LATE_WATCH_MS): each watch reads its session's records twice a second, within a read
 * budget of its own.
 */
export const MAX_LATE_WATCHES = 16;

/** A late watch, told to end once a newer turn of its session is watched instead. */
interface LateWatch {
  turn: number;
  given: boolean;
}

/** The turn's records as the wait left them, and the place of its prompt among them. */
type TurnRecordsWaited = RecordsWaited & { nth: number };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Ends the turns of one proxy. */
export class TurnFinisher {
  constructor(
    readonly state: ProxyState,
    readonly steps: TurnEndSteps,
    readonly retries: RetryHold,
  ) {}

  /**
   * Per session: how many earlier turns' prompts have not landed in their records yet (a
   * machine loaded past `records_wait_ms`): they land in a later turn's records, before
   * its own prompt.
   */
  readonly #owed = new Map<string, number>();
  /**
   * Sends a line right before the answer of a turn's prompt (the proxy's ClientAnswers
   * `before`); set once the answers exist.
   */
  beforeAnswer: ((turn: Turn, line: Uint8Array) => void) | null = null;

  /** Sessions whose last turn found no record file at all. */
  readonly #recordless = new Set<string>();

  /** Per session: the latest turn whose end began. */
  readonly #latest = new Map<string, number>();
  /** Per session: its one late watch (a newer turn's replaces it; see `#watchLate`). */
  readonly #watches = new Map<string, LateWatch>();
  /**
   * Each turn's plugin budget, shared by every read of its records wait and late watch (a
   * reader that loops is stopped once per turn, not on every read).
   */
  readonly #ledgers = new WeakMap<Turn, PluginLedger>();

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
    this.#latest.set(turn.sessionId, turn.turn);
    const ended = this.#records(turn, end).then(async (waited) => {
      // One read budget for the logs, from the moment the records are in.
      const logs = await this.#logs(turn, end, new ReadBudget());
      const result = await endTurn(
        { conclude: this.#concludeInput(turn, end, now, waited?.read ?? null, logs), line },
        this.steps,
        this.retries,
        this.state.log,
      );
      if (waited?.ended === false) this.#watchLate(turn, end, now, logs, result, waited.nth);
      this.#deliverRecovered(turn, result, line);
      return result;
    });
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
   * The turn's session records (docs/EVIDENCE.md), for a turn the agent answered with a
   * result or an error: when the profile's readers show where a turn ends (`endsTurn`),
   * read as soon as that end is there, waiting for it at most `records_wait_ms` (`ended`:
   * false when it did not come); else once, after the settle window (taken as ended: nothing
   * is watched later). The response waits that long. Each read has a budget of its own.
   */
  async #records(turn: Turn, end: TurnEnd): Promise<TurnRecordsWaited | null> {
    const taken = turn.records;
    if (!taken || (end.kind !== "result" && end.kind !== "error")) return null;
    const { profile, readers = [] } = this.state.opts;
    if (!readersShowEnd(readers)) {
      await sleep(profile.recordsSettleMs ?? DEFAULT_SETTLE_MS);
      const read = await this.#readRecords(turn);
      return { read, prompts: 0, ended: true, waitedMs: 0, nth: 1 };
    }
    const session = turn.sessionId;
    // A session whose records were nowhere in its last turn either (a path that does not
    // match where the agent writes, an agent that writes none) is not waited on for long.
    const nowhere = this.#recordless.has(session) && taken.snapshot.files.size === 0;
    const boundMs = nowhere
      ? profile.recordsSettleMs ?? DEFAULT_SETTLE_MS
      : profile.recordsWaitMs ?? DEFAULT_WAIT_MS;
    const nth = 1 + (this.#owed.get(session) ?? 0);
    const waited = await waitForEnd(
      this.#waitIo(turn),
      (read) => turnRecords(read, readers, nth, this.#plugins(turn)),
      boundMs,
    );
    // Prompts that did not land yet may land in the next turn's records, before its own.
    this.#owed.set(session, nth - waited.prompts);
    if (waited.read.records.length === 0 && taken.snapshot.files.size === 0) {
      this.#recordless.add(session);
    } else this.#recordless.delete(session);
    if (!waited.ended) {
      waited.read.diagnostics.push(
        `the session records did not show the turn's end within ${
          nowhere
            ? "records_settle_ms (none were found in the session's last turn either)"
            : "records_wait_ms"
        } (${boundMs} ms): decided from what had landed; should the end land later, the ` +
          `journal gets a revised Outcome`,
      );
    }
    return { ...waited, nth };
  }

  /**
   * `--recover-replies`: the final answer the records hold and the client did not receive
   * goes to the client as the turn's last `agent_message_chunk` (what it still lacks of it),
   * right before the prompt's response (docs/PROXY.md). Not when a retry holds the response.
   */
  #deliverRecovered(turn: Turn, result: TurnEndResult, line: Uint8Array | null): void {
    // All of it, not the Outcome's capped copy: the client is told the turn is ok.
    const recovered = result.recoveredText ?? result.outcome.reply.recovered;
    if (!this.state.opts.recoverReplies || recovered == null || result.send === null) return;
    const message = {
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: turn.sessionId,
        update: {
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: recoveredRest(turnText(turn), recovered) },
        },
      },
    };
    const ending = line ? lineEnding(line) : "\n";
    this.beforeAnswer?.(turn, new TextEncoder().encode(JSON.stringify(message) + ending));
    this.state.log(`session ${turn.sessionId} turn ${turn.turn}: the recovered reply was sent`);
  }

  /** One read of the turn's records; a failure is a diagnostic. */
  async #readRecords(turn: Turn): Promise<RecordsRead> {
    try {
      return await readSessionRecords(
        turn.records!,
        turn.startedAt,
        new ReadBudget(),
        this.state.opts.fs,
      );
    } catch (err) {
      return { records: [], diagnostics: [`session records: ${errorText(err)}`] };
    }
  }

  /** The turn's plugin budget for its records (see `#ledgers`). */
  #plugins(turn: Turn): PluginLedger {
    let ledger = this.#ledgers.get(turn);
    if (!ledger) this.#ledgers.set(turn, ledger = pluginLedger());
    return ledger;
  }

  /** The wait's clock and reads; it stops once the agent is gone (nothing more lands). */
  #waitIo(turn: Turn) {
    return {
      now: this.state.now,
      sleep,
      read: () => this.#readRecords(turn),
      done: () => this.state.agentGone,
    };
  }

  /**
   * The records' end did not come within the bound: they are watched on (at most
   * LATE_WATCH_MS, and no longer than the agent runs); when the end lands, the turn is
   * concluded again from them and, when that reads differently, the journal gets the
   * revised Outcome. The client's answer is long gone; only the record changes. One watch
   * per session: a newer turn's watch ends the older one after its next read (an agent
   * whose ends never land would otherwise have every turn of the last 30 s read again twice
   * a second), and at most MAX_LATE_WATCHES run at once; a turn given up on keeps its first
   * Outcome, and the log says so.
   */
  #watchLate(
    turn: Turn,
    end: TurnEnd,
    endedAt: number,
    logs: ScanResult | null,
    first: TurnEndResult,
    nth: number,
  ): void {
    const { readers = [] } = this.state.opts;
    const session = turn.sessionId;
    const plugins = this.#plugins(turn);
    const look = (read: RecordsRead) => turnRecords(read, readers, nth, plugins);
    const older = this.#watches.get(session);
    if (older) {
      older.given = true;
      this.state.log(
        `session ${session} turn ${older.turn}: its late watch gives way to turn ${turn.turn}'s`,
      );
    } else if (this.#watches.size >= MAX_LATE_WATCHES) {
      this.state.log(
        `session ${session} turn ${turn.turn}: not watched late (${MAX_LATE_WATCHES} ` +
          `sessions are watched already): its first Outcome stands`,
      );
      return;
    }
    const mine: LateWatch = { turn: turn.turn, given: false };
    this.#watches.set(session, mine);
    const io = this.#waitIo(turn);
    const watch = waitForEnd(
      { ...io, done: () => io.done() || mine.given },
      look,
      LATE_WATCH_MS,
      LATE_POLL_MS,
    )
      .then((late) => {
        if (!late.ended) return;
        // Its prompt landed before the session's next turn began: that turn owes it none.
        const running = this.state.turns.forSession(session);
        if (this.#latest.get(session) === turn.turn && (running ?? turn) === turn) {
          this.#owed.set(session, nth - late.prompts);
        }
        // The client's answer is gone: a reply recovered now can no longer be sent.
        const input = {
          ...this.#concludeInput(turn, end, endedAt, late.read, logs),
          recoverReplies: false,
        };
        const again = withPluginBudget(() => concludeTurn(input), plugins).outcome;
        const revised = revisedOutcome(first.outcome, again, late.waitedMs);
        if (revised === null) return;
        this.state.log(
          `session ${turn.sessionId} turn ${turn.turn}: revised to ${revised.status}`,
        );
        this.steps.recorder?.revised(
          { session: turn.sessionId, turn: turn.turn },
          turn.attempt,
          revised.revision ?? 1,
          revised,
        );
        this.steps.onRevised?.(revised);
      })
      .catch((err) => this.state.guard.failed("the turn's revision", err));
    this.state.inFlight.add(watch);
    void watch.finally(() => {
      this.state.inFlight.delete(watch);
      if (this.#watches.get(session) === mine) this.#watches.delete(session);
    });
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
      recoverReplies: opts.recoverReplies === true,
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
