/**
 * Each ACP session's working directory, as the client named it: `session/new` carries
 * `params.cwd` and its response the new `sessionId`; `session/load` carries both. Agents
 * name their session folders after it, so a profile's `{cwd}` means the session's cwd
 * (lib/io/path_template.ts). A peer can open any number of sessions: at most `max` are
 * remembered (the oldest dropped first), and as many `session/new` requests waiting for
 * their answers.
 */
import { idKey, isObject, type JsonRpcId } from "./jsonrpc.ts";

/** Sessions (and unanswered `session/new` requests) remembered at most. */
export const MAX_SESSION_CWDS = 4096;

/** The cwd of each session this connection opened or loaded. */
export class SessionCwds {
  readonly #sessions = new Map<string, string>();
  readonly #requested = new Map<string, string>();

  constructor(readonly max: number = MAX_SESSION_CWDS) {}

  /** A `session/new` request `id` with its `params`: its cwd waits for the answer. */
  requested(id: JsonRpcId, params: unknown): void {
    const cwd = cwdOf(params);
    if (cwd !== null) remember(this.#requested, idKey(id), cwd, this.max);
  }

  /** The answer to request `id`: a `session/new` one names the session its cwd is for. */
  answered(id: JsonRpcId, result: unknown): void {
    if (this.#requested.size === 0) return;
    const key = idKey(id);
    const cwd = this.#requested.get(key);
    if (cwd === undefined) return;
    this.#requested.delete(key);
    const sessionId = isObject(result) ? result.sessionId : undefined;
    if (typeof sessionId === "string") remember(this.#sessions, sessionId, cwd, this.max);
  }

  /** A `session/load` (or `session/resume`) request's `params`: session and cwd at once. */
  loaded(params: unknown): void {
    const cwd = cwdOf(params);
    const sessionId = isObject(params) ? params.sessionId : undefined;
    if (cwd !== null && typeof sessionId === "string") {
      remember(this.#sessions, sessionId, cwd, this.max);
    }
  }

  /** The session's cwd, when the client named one. */
  get(sessionId: string): string | undefined {
    return this.#sessions.get(sessionId);
  }

  /** Sessions remembered. */
  get size(): number {
    return this.#sessions.size;
  }
}

/** `params.cwd` when it is a non-empty string. */
function cwdOf(params: unknown): string | null {
  const cwd = isObject(params) ? params.cwd : undefined;
  return typeof cwd === "string" && cwd !== "" ? cwd : null;
}

/** Sets `key` as the newest entry, dropping the oldest past `max`. */
function remember(map: Map<string, string>, key: string, value: string, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) map.delete(map.keys().next().value!);
}
