/**
 * Agent → client line routing: folds the agent's `session/update`s into their turns,
 * tracks its requests to the client, and hands its responses to the client's requests to
 * the one place that answers them (lib/proxy/answers.ts).
 */
import { Buffer } from "node:buffer";
import { isObject, type Opaque, readMessage, sessionIdOf, startsArray } from "../acp/jsonrpc.ts";
import { peekUpdate } from "../acp/peek.ts";
import type { ClientAnswers } from "./answers.ts";
import {
  keepPrefix,
  type LongLine,
  newLong,
  prefixKind,
  TOO_DEEP,
  TOO_LONG,
} from "./long_lines.ts";
import { hasBytes, hasBytesIn, type LineReader, PASS, type Verdict } from "./relay.ts";
import { filterBatch } from "./batches.ts";
import type { ProxyState } from "./state.ts";
import { refuse } from "./tracking.ts";
import {
  observeUninspected,
  observeUpdate,
  observeUpdateLine,
  sessionIdInPrefix,
} from "./turns.ts";

const ID_KEY = new TextEncoder().encode('"id"');
/** Lines up to this long are searched for `"id"` byte by byte (`quick`). */
const SHORT_LINE_BYTES = 256;

/** Reads the agent's lines (a LineReader for the agent → client pump). */
export class AgentLines implements LineReader {
  readonly #state: ProxyState;
  readonly #answers: ClientAnswers;
  /** The agent's line too long to inspect, while it passes. */
  #long: LongLine | null = null;
  /** The clock reading of the chunk being pumped, taken by its first update line. */
  #chunkNow: number | null = null;

  constructor(state: ProxyState, answers: ClientAnswers) {
    this.#state = state;
    this.#answers = answers;
  }

  /** A new chunk comes: its session/update lines share one clock reading. */
  chunk(): void {
    this.#chunkNow = null;
  }

  /**
   * A canonical `session/update` line, `bytes[start, end)`, known by its first bytes: it
   * counts as output of its session's running turn, and passes as it is (true). False for
   * any other line (inspected as a whole).
   */
  quick(bytes: Uint8Array, start: number, end: number): boolean {
    if (this.#update(bytes, start, end, this.#chunkNow ??= this.#state.now())) return true;
    // As `line` decides, without a view of the line: with no turn running, a short line
    // without an `"id"` key passes (a flood of short lines costs no allocation per line).
    return this.#state.turns.size === 0 && end - start <= SHORT_LINE_BYTES &&
      !hasBytesIn(bytes, start, end, ID_KEY);
  }

  /**
   * Whole agent lines at once: with no turn running, lines without an `"id"` key pass and
   * tell nothing (a notification only matters to a running turn; requests and responses
   * carry an id), so a stretch without one passes after one search (a flood of short lines
   * between turns costs no call per line).
   */
  skim(bytes: Uint8Array, start: number, end: number): boolean {
    return this.#state.turns.size === 0 &&
      Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).indexOf(ID_KEY) === -1;
  }

  /**
   * A complete agent line: folded into its turn and passed, or, the answer to a turn's
   * prompt, replaced by what the turn's end sends.
   */
  line(line: Uint8Array): Verdict {
    const state = this.#state;
    // Cheap pre-checks: a canonical session/update is known by its first bytes; any other
    // line without an `"id"` key is a notification (or not JSON-RPC). Notifications only
    // matter while a turn runs.
    if (this.#update(line, 0, line.length, state.now())) return PASS;
    if (state.turns.size === 0 && !hasBytes(line, ID_KEY)) return PASS;
    const message = readMessage(line);
    if (message?.kind === "opaque") return this.#opaque(message, line);
    if (!message) return startsArray(line) ? this.#batch(line) : PASS;
    const now = state.now();
    switch (message.kind) {
      case "notification": {
        if (message.method !== "session/update") return PASS;
        const sessionId = sessionIdOf(message.params);
        const turn = sessionId !== null ? state.turns.forSession(sessionId) : undefined;
        if (turn && isObject(message.params)) observeUpdate(turn, message.params.update, now);
        return PASS;
      }
      case "request": {
        if (state.agentPending.full) return refuse(state, "agent", message.id, line);
        const sessionId = sessionIdOf(message.params);
        state.agentPending.add(message.id, message.method, sessionId);
        const turn = sessionId !== null ? state.turns.forSession(sessionId) : undefined;
        if (turn) {
          turn.lastActivityAt = now;
          turn.requests++;
        }
        return PASS;
      }
      default:
        return this.#answers.response(message, line, now);
    }
  }

  /**
   * A piece of an agent line too long to inspect. Its first PREFIX_BYTES tell its kind:
   * a response ends its request (unread); other lines count as output of the turn of the
   * session they name, or of the only running turn when they name none.
   */
  passing(piece: Uint8Array, end: boolean, why = TOO_LONG): void {
    const state = this.#state;
    const long = this.#long ??= newLong(why);
    const now = state.now();
    const scanned = keepPrefix(long, piece, end);
    if (scanned) {
      state.log(`an agent line ${long.why} is passing through unread`);
      const kind = prefixKind(scanned.scan);
      const sessionId = sessionIdInPrefix(scanned.text);
      if (kind.kind === "request") {
        state.agentPending.add(kind.id, kind.method, sessionId, kind.idLexeme);
      }
      if (kind.kind !== "response" && state.turns.size > 0) {
        long.turn = sessionId !== null
          ? state.turns.forSession(sessionId)
          : state.turns.size === 1
          ? state.turns.all()[0]
          : undefined;
        if (long.turn) observeUninspected(long.turn, now);
      }
    } else if (long.turn) {
      long.turn.lastActivityAt = now;
    }
    if (!end) return;
    this.#long = null;
    const kind = prefixKind(long.scan);
    if (kind.kind === "response") this.#answers.unread(kind.id, kind.isError, long.why, now);
  }

  #update(bytes: Uint8Array, start: number, end: number, now: number): boolean {
    const peek = peekUpdate(bytes, start, end);
    if (peek === null) return false;
    const turns = this.#state.turns;
    const turn = turns.size === 0
      ? undefined
      : turns.forSessionBytes(bytes, peek.idStart, peek.idEnd);
    if (turn) observeUpdateLine(turn, peek, bytes, now);
    return true;
  }

  /**
   * An agent line nested too deeply to read: only its envelope is looked at (a response
   * ends its request unread, a request is tracked, anything else counts as output); when
   * not even that could be parsed, its first bytes tell, as for a line too long.
   */
  #opaque(opaque: Opaque, line: Uint8Array): Verdict {
    const message = opaque.message;
    if (message === null) {
      this.passing(line, true, TOO_DEEP);
      return PASS;
    }
    const state = this.#state;
    state.log(`an agent line ${TOO_DEEP} is passing through unread`);
    const now = state.now();
    if (message.kind === "result" || message.kind === "error") {
      this.#answers.unread(message.id, message.kind === "error", TOO_DEEP, now);
      return PASS;
    }
    const sessionId = sessionIdOf(message.params);
    if (message.kind === "request") {
      if (state.agentPending.full) return refuse(state, "agent", message.id, line);
      state.agentPending.add(message.id, message.method, sessionId);
    }
    const turn = sessionId !== null ? state.turns.forSession(sessionId) : undefined;
    if (turn) observeUninspected(turn, now);
    return PASS;
  }

  /**
   * A batch from the agent: its responses answer the client's requests; its requests are
   * tracked, those past the in-flight cap refused (answered to the agent) and taken out of
   * it, as a single line's would be (lib/proxy/batches.ts).
   */
  #batch(line: Uint8Array): Verdict {
    const state = this.#state;
    const now = state.now();
    return filterBatch(line, ({ message, single }) => {
      if (message === null || message.kind === "notification") return false;
      if (message.kind !== "request") {
        this.#answers.inBatch(message, now);
        return false;
      }
      if (single !== null && state.agentPending.full) {
        refuse(state, "agent", message.id, single);
        return true;
      }
      state.agentPending.add(message.id, message.method, sessionIdOf(message.params));
      return false;
    });
  }
}
