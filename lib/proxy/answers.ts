/**
 * The shell of the one place that decides what the client receives for each of its
 * requests (the rules: `answer` in lib/proxy/answer_rules.ts). It keeps what the rules read
 * — the client's requests in flight, the ids answered lately, the turns cut short for
 * silence, the lines to send before a prompt's response — asks `answer` whenever something
 * happens to a request, and applies the answer: the bytes to the client, the turn's end,
 * the request's entry, the `--verbose` line. Nothing else in the proxy answers a client
 * request.
 *
 * For what comes next (see lib/proxy/answer_rules.ts): `answerNow(turn, end)` answers a
 * prompt at once with how its turn ended (fail-fast); `before(turn, line)` sends a line
 * right before the prompt's response (a recovered reply).
 */
import { encodeResponse, idKey, type JsonRpcId, type Message } from "../acp/jsonrpc.ts";
import { joinBytes, lineEnding } from "../acp/lines.ts";
import type { PendingRequest } from "../acp/tracker.ts";
import { type Answer, answer, type AnswerEvent, type RequestView, shown } from "./answer_rules.ts";
import { idLexemeOf } from "./long_lines.ts";
import type { TurnEnd } from "./conclude.ts";
import type { TurnFinisher } from "./finish.ts";
import { DROP, PASS, type Verdict } from "./relay.ts";
import { injectReply, type ProxyState } from "./state.ts";
import type { Turn } from "./turns.ts";

/** How many answered ids are remembered (to swallow a second response to one). */
export const ANSWERED_IDS_KEPT = 1024;
/** Longest id key remembered: a longer id's second response is not recognised. */
const ANSWERED_ID_MAX_CHARS = 256;

/** What the answers need of the turn's end (lib/proxy/finish.ts). */
export type TurnEnder = Pick<TurnFinisher, "finish" | "forwarded">;

/** The one place a client request is answered from (see the module comment). */
export class ClientAnswers {
  readonly #state: ProxyState;
  readonly #ender: TurnEnder;
  /** Ids answered lately (oldest first); a new request under one forgets it. */
  readonly #answered = new Set<string>();
  /** Turns sent a `session/cancel` for silence: how long they had been silent. */
  readonly #silent = new Map<Turn, number>();
  /** Lines to send right before a turn's answer. */
  readonly #before = new WeakMap<Turn, Uint8Array[]>();

  constructor(state: ProxyState, ender: TurnEnder) {
    this.#state = state;
    this.#ender = ender;
  }

  /** The client sent a request (or a retry sends its prompt again): it waits for one answer. */
  request(
    id: JsonRpcId,
    method: string,
    sessionId: string | null,
    idLexeme?: string,
  ): PendingRequest {
    this.#answered.delete(idKey(id));
    return this.#state.clientPending.add(id, method, sessionId, idLexeme);
  }

  /**
   * A client request under an id the agent still owes a response to — turnguard answered
   * that earlier request for it (`--fail-fast`, silence) and waits for the agent's late
   * response only to swallow it: forwarded, the new request would be answered by that late
   * response and its own answer dropped. It is answered at once with an error instead
   * (the DROP verdict); null when the id is free.
   */
  reused(id: JsonRpcId, line: Uint8Array): Verdict | null {
    if (this.#state.clientPending.get(id)?.answered !== true) return null;
    this.#state.log(
      `refused client request ${shown(id)}: the agent still owes its answer to the earlier ` +
        `request under that id`,
    );
    return this.refused(
      id,
      idLexemeOf(line, id),
      lineEnding(line),
      "turnguard: the agent has not yet answered the earlier request under this id (turnguard " +
        "answered it for the agent); this one was not forwarded: send it under a new id",
    );
  }

  /** A client request past the in-flight cap (never sent to the agent): answered at once. */
  refused(id: JsonRpcId, idLexeme: string, ending: string, message: string): Verdict {
    const decided = answer(this.#view(id), { kind: "refused", message });
    if (decided.kind === "send") {
      this.#state.toClient.inject(encodeResponse(decided.response, idLexeme, ending));
    }
    return DROP;
  }

  /** The agent's response line (`line`), read: what the relay does with it. */
  response(
    message: Extract<Message, { kind: "result" | "error" }>,
    line: Uint8Array,
    now: number,
  ): Verdict {
    const id = message.id;
    const view = this.#view(id);
    const decided = answer(view, { kind: "response", message });
    // The cwd a `session/new` answer names is the session's, whoever answers the client.
    if (view.pending !== null && message.kind === "result") {
      this.#state.sessionCwds.answered(id, message.result);
    }
    this.#settle(id, decided);
    switch (decided.kind) {
      case "swallow":
        return DROP;
      case "end-turn":
        return { later: this.#endTurn(id, decided, line, now) };
      default:
        return PASS;
    }
  }

  /** The agent's response went through unread (too long or too deep to read). */
  unread(id: JsonRpcId, isError: boolean, why: string, now: number): void {
    const decided = answer(this.#view(id), { kind: "unread", isError, why });
    this.#apply(id, decided, now);
  }

  /** A response in the agent's batch line (the line passes whole). */
  inBatch(message: Extract<Message, { kind: "result" | "error" }>, now: number): void {
    this.#apply(message.id, answer(this.#view(message.id), { kind: "in-batch", message }), now);
  }

  /** The turn was sent a `session/cancel` after `silentMs` of silence; its grace runs. */
  cutShort(turn: Turn, silentMs: number): void {
    this.#silent.set(turn, silentMs);
  }

  /** A silent turn's grace is over: the client is answered with its timeout now. */
  silenceOver(turn: Turn, now: number): void {
    const silentMs = this.#silent.get(turn);
    if (silentMs === undefined) return;
    this.#event(turn, { kind: "silence", silentMs }, now);
  }

  /**
   * Answers `turn`'s prompt now, its turn ended as `end` (concluded like any other, by
   * `concludeTurn`); the agent's later response to it is swallowed. False when the prompt
   * was answered already.
   */
  answerNow(turn: Turn, end: TurnEnd, now: number): boolean {
    return this.#event(turn, { kind: "now", end }, now);
  }

  /**
   * Sends `line` (a complete line, with its ending) right before whatever answers `turn`'s
   * prompt, whoever answers it. A response held for a retry takes its lines along; a
   * response that went through unread has none (they are not sent).
   */
  before(turn: Turn, line: Uint8Array): void {
    const lines = this.#before.get(turn);
    if (lines) lines.push(line);
    else this.#before.set(turn, [line]);
  }

  /** A failed attempt's response, held while its retry waited, goes out (the retry did not run). */
  held(turn: Turn, response: Uint8Array): void {
    this.#state.toClient.inject(this.#withBefore(turn, response));
  }

  /** The agent is gone: every request still waiting gets its one answer. */
  exited(code: number | null, signal: string | null, stderrTail: string, now: number): void {
    const state = this.#state;
    const event: AnswerEvent = {
      kind: "exit",
      code,
      signal,
      stderrTail,
      clientGone: state.clientGone,
    };
    for (const request of state.clientPending.all()) {
      const view = this.#view(request.id, request);
      const decided = answer(view, event);
      // A turn ended by a finish signal was cancelled (whether a client that hung up gave up
      // on it is decide's, `givenUp`).
      const turn = state.turns.forRequest(request.id);
      if (decided.kind === "end-turn" && turn && state.signalled) turn.cancelled = true;
      this.#apply(request.id, decided, now);
    }
  }

  /** `event` happened to `turn`'s prompt; false when it was no longer waiting. */
  #event(turn: Turn, event: AnswerEvent, now: number): boolean {
    const id = turn.requestId;
    if (this.#state.turns.forRequest(id) !== turn) return false;
    const decided = answer(this.#view(id), event);
    this.#apply(id, decided, now);
    return decided.kind !== "none";
  }

  /** What the rules read of `id` (`request`: the entry, when it is not the oldest). */
  #view(id: JsonRpcId, request?: PendingRequest): RequestView {
    const state = this.#state;
    const pending = request ?? state.clientPending.get(id);
    const turn = state.turns.forRequest(id);
    return {
      id,
      pending: pending ? { answered: pending.answered } : null,
      turn: turn ? { silentMs: this.#silent.get(turn) ?? null } : null,
      answeredBefore: this.#answered.has(idKey(id)),
    };
  }

  /** Applies an answer decided without an agent line to send in its place. */
  #apply(id: JsonRpcId, decided: Answer, now: number): void {
    const state = this.#state;
    const request = state.clientPending.get(id);
    this.#settle(id, decided);
    switch (decided.kind) {
      case "send":
        state.toClient.inject(
          encodeResponse(decided.response, request?.idLexeme ?? JSON.stringify(id), "\n"),
        );
        return;
      case "end-turn":
        injectReply(state, this.#endTurn(id, decided, null, now));
        return;
      case "end-unread": {
        const turn = this.#turnEnded(id);
        if (turn) injectReply(state, this.#ender.forwarded(turn, decided.end, decided.note, now));
        return;
      }
    }
  }

  /** The entry of `id` as the answer says; its `--verbose` line. */
  #settle(id: JsonRpcId, decided: Answer): void {
    const state = this.#state;
    if ((decided.kind === "swallow" || decided.kind === "forward") && decided.diagnostic) {
      state.log(decided.diagnostic);
    }
    if (decided.settle === "keep") return;
    const key = idKey(id);
    if (decided.settle === "take") state.clientPending.take(id);
    else {
      const request = state.clientPending.get(id);
      if (request) request.answered = true;
    }
    if (key.length > ANSWERED_ID_MAX_CHARS) return;
    this.#answered.delete(key);
    this.#answered.add(key);
    if (this.#answered.size > ANSWERED_IDS_KEPT) {
      this.#answered.delete(this.#answered.values().next().value!);
    }
  }

  /** Ends `id`'s turn: the bytes its end sends (with the lines to send before them). */
  #endTurn(
    id: JsonRpcId,
    decided: Extract<Answer, { kind: "end-turn" }>,
    line: Uint8Array | null,
    now: number,
  ): Promise<Uint8Array | null> {
    const turn = this.#turnEnded(id)!;
    const fallback = decided.fallback
      ? encodeResponse(decided.fallback, turn.requestIdLexeme, "\n")
      : line;
    const agentLine = decided.agentLine ? line : null;
    return this.#ender.finish(turn, decided.end, agentLine, now, fallback)
      .then((bytes) => bytes && this.#withBefore(turn, bytes));
  }

  /** The running turn of `id`, ended (no longer running, no longer cut short). */
  #turnEnded(id: JsonRpcId): Turn | undefined {
    const turn = this.#state.turns.forRequest(id);
    if (!turn) return undefined;
    this.#state.turns.end(turn);
    this.#silent.delete(turn);
    return turn;
  }

  /** `bytes` after the lines to send before the turn's answer, if any. */
  #withBefore(turn: Turn, bytes: Uint8Array): Uint8Array {
    const lines = this.#before.get(turn);
    if (!lines) return bytes;
    this.#before.delete(turn);
    const all = [...lines, bytes];
    return joinBytes(all, all.reduce((n, b) => n + b.length, 0));
  }
}
