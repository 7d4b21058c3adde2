/**
 * The proxy-chain protocol: how a component of a conductor's chain (client → conductor →
 * proxy … → agent) learns it is a proxy, and how the messages it exchanges with its
 * successor travel inside an envelope on the conductor's connection. Two generations are in
 * use, and both are spoken:
 *
 * - `rfd`: the "Agent Extensions via ACP Proxies" RFD as published
 *   (agentclientprotocol/agent-client-protocol, docs/rfds/proxy-chains.mdx, "Proxy
 *   initialization protocol" and "Message reference"): the conductor sends `proxy/initialize`
 *   (the params and the answer of `initialize`); the proxy forwards `initialize` to its
 *   successor; every message to or from the successor is a `proxy/successor` whose params are
 *   `{method, params, meta?}`: a request when the envelope has an id, a notification when not.
 * - `meta`: the conductors on npm (@thinkwell/conductor 0.5.7, dist/conductor.js
 *   `handleInitialize`, `addProxyCapability`, `createProxyInitializeResponder`; envelope
 *   names in @thinkwell/protocol 0.5.7, dist/proxy-protocol.js): `initialize` with
 *   `_meta.proxy: true`, which the proxy's answer must carry back in `result._meta.proxy`
 *   (else the conductor refuses the chain); envelopes `_proxy/successor/request` and
 *   `_proxy/successor/notification`, params `{method, params}`.
 *
 * In both, the answer to an enveloped request is the wrapped request's answer, unchanged
 * (no envelope), under the envelope's id.
 */
import { isObject, type JsonObject, type JsonRpcId, type Message } from "./jsonrpc.ts";

/** Which generation of the proxy-chain protocol a chain speaks (see the module doc). */
export type Generation = "rfd" | "meta";

/** The RFD's initialization of a proxy. */
export const PROXY_INITIALIZE = "proxy/initialize";
/** The RFD's envelope, both ways, requests and notifications. */
export const PROXY_SUCCESSOR = "proxy/successor";
/** The npm conductors' envelope of a request. */
export const META_SUCCESSOR_REQUEST = "_proxy/successor/request";
/** The npm conductors' envelope of a notification. */
export const META_SUCCESSOR_NOTIFICATION = "_proxy/successor/notification";

/** A message of the successor, out of its envelope. */
export type Unwrapped =
  | { kind: "request"; id: JsonRpcId; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown };

/**
 * How a request initializes a chain link: `rfd` for `proxy/initialize`, `meta` for
 * `initialize` with `_meta.proxy: true`; null for any other message.
 */
export function proxyInitOf(message: Message): Generation | null {
  if (message.kind !== "request") return null;
  if (message.method === PROXY_INITIALIZE) return "rfd";
  if (message.method !== "initialize" || !isObject(message.params)) return null;
  const meta = message.params._meta;
  return isObject(meta) && meta.proxy === true ? "meta" : null;
}

/** Whether a message initializes an ACP connection at all (either method). */
export function isInitialize(message: Message): boolean {
  return message.kind === "request" &&
    (message.method === "initialize" || message.method === PROXY_INITIALIZE);
}

/** The successor's message in an envelope (either generation); null when it is none. */
export function unwrap(message: Message): Unwrapped | null {
  if (message.kind !== "request" && message.kind !== "notification") return null;
  const { method } = message;
  const enveloped = method === PROXY_SUCCESSOR ||
    (message.kind === "request"
      ? method === META_SUCCESSOR_REQUEST
      : method === META_SUCCESSOR_NOTIFICATION);
  if (!enveloped || !isObject(message.params)) return null;
  const inner = message.params.method;
  if (typeof inner !== "string") return null;
  const params = message.params.params;
  return message.kind === "request"
    ? { kind: "request", id: message.id, method: inner, params }
    : { kind: "notification", method: inner, params };
}

/** The envelope of a message to the successor; `id` undefined for a notification. */
export function wrap(
  generation: Generation,
  id: JsonRpcId | undefined,
  method: string,
  params: unknown,
): JsonObject {
  const inner: JsonObject = params === undefined ? { method } : { method, params };
  if (id === undefined) {
    const name = generation === "rfd" ? PROXY_SUCCESSOR : META_SUCCESSOR_NOTIFICATION;
    return { jsonrpc: "2.0", method: name, params: inner };
  }
  const name = generation === "rfd" ? PROXY_SUCCESSOR : META_SUCCESSOR_REQUEST;
  return { jsonrpc: "2.0", id, method: name, params: inner };
}

/**
 * The result of the proxy's answer to its initialization: under `meta` it must say
 * `_meta.proxy: true` (the conductor checks it); under `rfd` it is the successor's, as it is.
 */
export function acceptedInit(generation: Generation, result: unknown): unknown {
  if (generation === "rfd") return result;
  const base = isObject(result) ? result : {};
  const meta = isObject(base._meta) ? base._meta : {};
  return { ...base, _meta: { ...meta, proxy: true } };
}

/** One line naming a generation, for the session's diagnostics. */
export function generationText(generation: Generation): string {
  return generation === "rfd"
    ? `initialized by ${PROXY_INITIALIZE}; the successor is reached through ${PROXY_SUCCESSOR}`
    : `initialized by initialize with _meta.proxy; the successor is reached through ${META_SUCCESSOR_REQUEST} and ${META_SUCCESSOR_NOTIFICATION}`;
}
