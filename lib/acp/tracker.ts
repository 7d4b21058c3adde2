/**
 * Pending requests of one direction. Each side of an ACP connection numbers its own ids,
 * so the proxy keeps one tracker for the client's requests and one for the agent's; a
 * response is matched only against the other side's requests.
 */
import { idKey, type JsonRpcId } from "./jsonrpc.ts";

/** One request still waiting for its response. */
export interface PendingRequest {
  id: JsonRpcId;
  method: string;
  /** The session the request's params name, if any. */
  sessionId: string | null;
  /** The id as the request wrote it, for responses turnguard builds (see `idLexeme`). */
  idLexeme: string;
  /** turnguard already answered it (timeout): the peer's late response is dropped. */
  answered: boolean;
}

/** Default bytes the waiting requests of one side may hold: 64 MiB. */
export const DEFAULT_PENDING_BYTES = 64 * 1024 * 1024;

/**
 * About how many bytes a waiting request holds: its id (as a value, as written and as a
 * key), its method and its session id, in UTF-16 code units counted twice.
 */
function requestBytes(r: PendingRequest, key: string): number {
  const id = typeof r.id === "string" ? r.id.length : 8;
  return 2 * (id + r.idLexeme.length + key.length + r.method.length + (r.sessionId?.length ?? 0)) +
    64;
}

/**
 * The requests one side sent that the other side has not answered yet. A peer may reuse an
 * id while its first request still waits: both are kept (a response answers the oldest),
 * so each still gets its one answer.
 */
export class PendingRequests {
  #byKey = new Map<string, PendingRequest[]>();
  #size = 0;
  #bytes = 0;
  #perSession = new Map<string, number>();
  readonly #max: number;
  readonly #maxBytes: number;

  /**
   * `max`: how many requests `full` lets in (the proxy refuses single-line requests past
   * it); `maxBytes`: how many bytes their ids, methods and sessions may hold (a peer picks
   * their length: an id may be a string of megabytes).
   */
  constructor(max = Infinity, maxBytes = DEFAULT_PENDING_BYTES) {
    this.#max = max;
    this.#maxBytes = maxBytes;
  }

  /**
   * True when `max` requests wait or they hold `maxBytes`: the proxy answers a new one
   * itself instead of sending it. (So what they hold is at most `maxBytes` and one request.)
   */
  get full(): boolean {
    return this.#size >= this.#max || this.#bytes >= this.#maxBytes;
  }

  /** Bytes the waiting requests hold (see requestBytes). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Records a request (behind any still waiting under the same id). */
  add(
    id: JsonRpcId,
    method: string,
    sessionId: string | null,
    idLexeme: string = JSON.stringify(id),
  ): PendingRequest {
    const request: PendingRequest = { id, method, sessionId, idLexeme, answered: false };
    const key = idKey(id);
    this.#bytes += requestBytes(request, key);
    const same = this.#byKey.get(key);
    if (same) same.push(request);
    else this.#byKey.set(key, [request]);
    this.#size++;
    if (sessionId !== null) {
      this.#perSession.set(sessionId, (this.#perSession.get(sessionId) ?? 0) + 1);
    }
    return request;
  }

  /** Finds the (oldest) request a response answers without removing it. */
  get(id: JsonRpcId): PendingRequest | undefined {
    return this.#byKey.get(idKey(id))?.[0];
  }

  /** Removes and returns the (oldest) request a response answers. */
  take(id: JsonRpcId): PendingRequest | undefined {
    const key = idKey(id);
    const same = this.#byKey.get(key);
    if (!same) return undefined;
    const request = same.shift()!;
    if (same.length === 0) this.#byKey.delete(key);
    this.#size--;
    this.#bytes -= requestBytes(request, key);
    if (request.sessionId !== null) {
      const n = (this.#perSession.get(request.sessionId) ?? 1) - 1;
      if (n > 0) this.#perSession.set(request.sessionId, n);
      else this.#perSession.delete(request.sessionId);
    }
    return request;
  }

  /** How many requests naming `sessionId` are waiting. */
  countFor(sessionId: string): number {
    return this.#perSession.get(sessionId) ?? 0;
  }

  /** Every waiting request. */
  all(): PendingRequest[] {
    return [...this.#byKey.values()].flat();
  }

  /** Number of waiting requests. */
  get size(): number {
    return this.#size;
  }
}
