/**
 * Client → agent line routing: tracks the client's requests (a `session/prompt` starts a
 * turn), its cancels and its answers to the agent's requests; every line passes as it is
 * unless refused past the in-flight cap or under an id the agent still owes an answer to.
 */
import {
  isObject,
  type Message,
  type Opaque,
  readMessage,
  sessionIdOf,
  startsArray,
} from "../acp/jsonrpc.ts";
import {
  idLexemeOf,
  keepPrefix,
  type LongLine,
  newLong,
  prefixKind,
  TOO_DEEP,
  TOO_LONG,
} from "./long_lines.ts";
import { hasBytes, type LineReader, PASS, type Verdict } from "./relay.ts";
import { filterBatch } from "./batches.ts";
import type { ClientAnswers } from "./answers.ts";
import type { RetryQueue } from "./retries.ts";
import type { ProxyState } from "./state.ts";
import { clientAnswered, refuse, startTurn } from "./tracking.ts";
import type { TurnEndSteps } from "./turn_end.ts";
import { sessionIdInPrefix } from "./turns.ts";

const METHOD_KEY = new TextEncoder().encode('"method"');

/** Reads the client's lines (a LineReader for the client → agent pump). */
export class ClientLines implements LineReader {
  readonly #state: ProxyState;
  readonly #steps: TurnEndSteps;
  readonly #retries: RetryQueue;
  readonly #answers: ClientAnswers;
  /** The client's line too long to inspect, while it passes. */
  #long: LongLine | null = null;

  constructor(
    state: ProxyState,
    steps: TurnEndSteps,
    retries: RetryQueue,
    answers: ClientAnswers,
  ) {
    this.#answers = answers;
    this.#state = state;
    this.#steps = steps;
    this.#retries = retries;
  }

  /** A complete client line: tracked for what it means, and passed (or refused). */
  line(line: Uint8Array): Verdict {
    const state = this.#state;
    // A line without a `"method"` key is a response (or not JSON-RPC): it only matters
    // while the agent waits on the client.
    if (state.agentPending.size === 0 && !hasBytes(line, METHOD_KEY)) return PASS;
    const message = readMessage(line);
    if (message?.kind === "opaque") return this.#opaque(message, line);
    if (!message) return startsArray(line) ? this.#batch(line) : PASS;
    const now = state.now();
    switch (message.kind) {
      case "request":
        return this.#request(message, line, now, true);
      case "notification": {
        if (message.method === "session/cancel") this.#cancel(sessionIdOf(message.params));
        return PASS;
      }
      default: {
        // The client answered one of the agent's requests (e.g. a permission prompt):
        // the silence clock of that session starts again now.
        clientAnswered(state, message.id, now);
        return PASS;
      }
    }
  }

  /**
   * A piece of a client line too long to inspect: a request whose id and method are in
   * its first PREFIX_BYTES is tracked (as a plain request, never a turn); a response ends
   * the agent's request. `whole`: the line, when it is in hand (nested too deeply).
   */
  passing(piece: Uint8Array, end: boolean, why = TOO_LONG, whole: Uint8Array | null = null): void {
    const state = this.#state;
    const long = this.#long ??= newLong(why);
    const scanned = keepPrefix(long, piece, end);
    if (scanned) {
      state.log(`a client line ${long.why} is passing through unread`);
      const kind = prefixKind(scanned.scan);
      if (kind.kind === "request") {
        const sessionId = sessionIdInPrefix(scanned.text);
        this.#answers.request(kind.id, kind.method, sessionId, kind.idLexeme);
        // A whole line in hand (nested too deeply to parse) can be sent again: a turn.
        if (whole && kind.method === "session/prompt" && sessionId !== null) {
          this.#retries.stopSession(sessionId, "a new prompt came in the session");
          const prompt = {
            id: kind.id,
            sessionId,
            line: whole,
            idLexeme: kind.idLexeme,
            meta: undefined,
          };
          startTurn(state, this.#steps, prompt, state.now());
        }
      } else if (kind.kind === "response") {
        clientAnswered(state, kind.id, state.now());
      }
    }
    if (end) this.#long = null;
  }

  /** The client cancelled a session's turn: a retry waiting in it stops too. */
  #cancel(sessionId: string | null): void {
    if (sessionId === null) return;
    this.#retries.stopSession(sessionId, "the client cancelled");
    const turn = this.#state.turns.forSession(sessionId);
    if (!turn) return;
    turn.cancelled = true;
    this.#state.log(`session ${turn.sessionId} turn ${turn.turn}: cancelled by the client`);
  }

  /**
   * A client line nested too deeply to read: a request is tracked (a `session/prompt`
   * starts a turn from its top-level members; its prompt and `_meta` are not read), a
   * response answers the agent's request.
   */
  #opaque(opaque: Opaque, line: Uint8Array): Verdict {
    const message = opaque.message;
    if (message === null) {
      this.passing(line, true, TOO_DEEP, line);
      return PASS;
    }
    const state = this.#state;
    state.log(`a client line ${TOO_DEEP} is passing through unread`);
    // Its `_meta` is not read: it may be what nests too deeply.
    if (message.kind === "request") return this.#request(message, line, state.now(), false);
    if (message.kind !== "notification") clientAnswered(state, message.id, state.now());
    return PASS;
  }

  /**
   * A client request: refused past the in-flight cap, else tracked; a `session/prompt` also
   * starts a turn, with the prompt's `_meta` unless the line was too deep to read it.
   */
  #request(
    message: Extract<Message, { kind: "request" }>,
    line: Uint8Array,
    now: number,
    readMeta: boolean,
  ): Verdict {
    const state = this.#state;
    if (state.clientPending.full) {
      return refuse(state, { client: this.#answers }, message.id, line);
    }
    const reused = this.#answers.reused(message.id, line);
    if (reused) return reused;
    const sessionId = sessionIdOf(message.params);
    const idLexeme = idLexemeOf(line, message.id);
    this.#answers.request(message.id, message.method, sessionId, idLexeme);
    if (message.method === "session/new") state.sessionCwds.requested(message.id, message.params);
    else if (message.method === "session/load" || message.method === "session/resume") {
      state.sessionCwds.loaded(message.params);
    }
    if (message.method === "session/prompt" && sessionId !== null) {
      this.#retries.stopSession(sessionId, "a new prompt came in the session");
      const meta = readMeta && isObject(message.params) ? message.params._meta : undefined;
      startTurn(state, this.#steps, { id: message.id, sessionId, line, idLexeme, meta }, now);
    }
    return PASS;
  }

  /**
   * A batch from the client: its requests are tracked (a `session/prompt` among them as a
   * plain request, not a turn), its responses answer the agent's requests. A request a single
   * line would have refused (past the in-flight cap, or under an id the agent still owes an
   * answer to) is refused here too: answered at once, and taken out of the batch, whose
   * other elements go on with their bytes unchanged (the batch is dropped when none is left).
   */
  #batch(line: Uint8Array): Verdict {
    const state = this.#state;
    const now = state.now();
    let refused = 0;
    const verdict = filterBatch(line, ({ message, single }) => {
      if (message === null) return false;
      if (message.kind !== "request") {
        if (message.kind !== "notification") clientAnswered(state, message.id, now);
        return false;
      }
      if (single !== null) {
        const answered = state.clientPending.full
          ? refuse(state, { client: this.#answers }, message.id, single)
          : this.#answers.reused(message.id, single);
        if (answered !== null) {
          refused++;
          return true;
        }
      }
      this.#answers.request(message.id, message.method, sessionIdOf(message.params));
      return false;
    });
    if (refused > 0) state.log(`a client batch: ${refused} of its requests refused`);
    return verdict;
  }
}
