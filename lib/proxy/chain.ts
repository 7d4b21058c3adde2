/**
 * Chain mode: turnguard as one link of a conductor's proxy chain (lib/acp/successor.ts). The
 * conductor's one connection (turnguard's stdin and stdout) carries both sides: the
 * predecessor's messages as they are, the successor's inside the envelope. This layer splits
 * that connection into the two sides the proxy already relays — the client's input and
 * output, and an "agent" whose stdin, stdout and exit are the envelope instead of a process —
 * so tracking, evidence, `decide`, the journal, telemetry, retries, the publish fallback and
 * the rewrites run exactly as in stdio mode (lib/proxy/proxy.ts).
 *
 * Each line on the connection is read once to route it: an envelope goes to the agent's
 * side unwrapped; an answer to a request turnguard wrapped goes there under the request's
 * own id; everything else is the client's, as its bytes. What the proxy writes toward the
 * agent is wrapped (requests under an id of this layer, so the two sides' ids never meet);
 * its answers to the successor's requests and everything it writes toward the client go out
 * as they are, except the answer to the proxy initialization under the `meta` generation
 * (`_meta.proxy: true`, which the conductor requires). The agent's process is the
 * conductor's: its exit status and stderr are never seen here, and the agent "exits" when
 * the conductor ends the chain (closes turnguard's stdin) or a signal stops turnguard.
 */
import { Buffer } from "node:buffer";
import {
  encodeLine,
  idKey,
  isObject,
  type JsonObject,
  type JsonRpcId,
  toMessage,
} from "../acp/jsonrpc.ts";
import {
  acceptedInit,
  type Generation,
  generationText,
  isInitialize,
  proxyInitOf,
  unwrap,
  wrap,
} from "../acp/successor.ts";
import {
  type AgentExit,
  type AgentProcess,
  type ByteSink,
  type ByteSource,
  byteSource,
} from "./agent_io.ts";
import type { ProxyOptions, ProxyResult } from "./options.ts";
import { runWithAgent } from "./proxy.ts";

const decoder = new TextDecoder();
const LF = 0x0a;

/** The prefix of the ids this layer gives the requests it wraps (see `ChainLink`). */
const WRAPPED_ID_PREFIX = "turnguard-successor-";

/**
 * Runs the proxy as a chain link on the conductor's connection (`opts.input`,
 * `opts.output`) until the conductor ends the chain; resolves with turnguard's exit status.
 */
export function runChainProxy(opts: ProxyOptions): Promise<ProxyResult> {
  const log = (line: string) => {
    if (opts.verbose) opts.stderr.write(`turnguard: chain: ${line}\n`);
  };
  log(
    opts.profile.logs.length > 0 || (opts.readers?.length ?? 0) > 0
      ? `profile ${opts.profile.name}: its logs and session records are read; the agent's exit status and stderr are the conductor's and unavailable`
      : `no --profile: the agent's logs and session records are not read; its exit status and stderr are the conductor's and unavailable`,
  );
  const link = new ChainLink(byteSource(opts.input), opts.output, log);
  return runWithAgent(
    { ...opts, input: link.clientInput, output: link.clientOutput },
    link.agent,
  );
}

/** Splits chunks into whole lines (each with its `\n`); the rest waits for the next chunk. */
class Lines {
  #rest: Uint8Array[] = [];

  push(chunk: Uint8Array, each: (line: Uint8Array) => void): void {
    let start = 0;
    for (let nl = chunk.indexOf(LF); nl !== -1; nl = chunk.indexOf(LF, start)) {
      let line = chunk.subarray(start, nl + 1);
      if (this.#rest.length > 0) {
        line = Buffer.concat([...this.#rest, line]);
        this.#rest = [];
      }
      each(line);
      start = nl + 1;
    }
    if (start < chunk.length) this.#rest.push(chunk.slice(start));
  }

  /** What is left when the stream ends: a last line without its `\n`. */
  end(each: (line: Uint8Array) => void): void {
    if (this.#rest.length === 0) return;
    const line = Buffer.concat(this.#rest);
    this.#rest = [];
    each(line);
  }
}

/** One side's input, fed by the link; its pause holds the conductor's connection. */
class SideSource implements ByteSource {
  #onData: ((chunk: Uint8Array) => void) | null = null;
  #onEnd: (() => void) | null = null;
  #stopped = false;
  paused = false;

  constructor(readonly changed: () => void) {}

  start(onData: (chunk: Uint8Array) => void, onEnd: () => void = () => {}): void {
    this.#onData = onData;
    this.#onEnd = onEnd;
    this.changed();
  }
  get started(): boolean {
    return this.#onData !== null;
  }
  pause(): void {
    this.paused = true;
    this.changed();
  }
  resume(): void {
    this.paused = false;
    this.changed();
  }
  stop(): void {
    this.#stopped = true;
    this.paused = false;
    this.changed();
  }
  deliver(bytes: Uint8Array): void {
    if (!this.#stopped) this.#onData?.(bytes);
  }
  end(): void {
    const onEnd = this.#onEnd;
    this.#onEnd = null;
    if (!this.#stopped) onEnd?.();
  }
}

/**
 * One side's output onto the conductor's connection: only whole lines go out (the two
 * sides' lines never interleave), each as `line` makes it (null: nothing).
 */
class SideSink implements ByteSink {
  readonly #lines = new Lines();
  readonly #drain: (() => void)[] = [];
  readonly #error: (() => void)[] = [];

  constructor(
    readonly wire: Wire,
    readonly line: (line: Uint8Array) => Uint8Array | null,
    readonly ended: () => void = () => {},
  ) {
    wire.sinks.push(this);
  }

  write(bytes: Uint8Array): boolean {
    this.#lines.push(bytes, (line) => this.#out(line));
    return !this.wire.full;
  }
  end(): void {
    this.#lines.end((line) => this.#out(line));
    this.ended();
  }
  on(event: "drain" | "error", listener: () => void): this {
    (event === "drain" ? this.#drain : this.#error).push(listener);
    return this;
  }
  emit(event: "drain" | "error"): void {
    for (const listener of event === "drain" ? this.#drain : this.#error) listener();
  }
  #out(line: Uint8Array): void {
    const out = this.line(line);
    if (out !== null && out.length > 0) this.wire.write(out);
  }
}

/** The conductor's side of turnguard's stdout, shared by both sides' sinks. */
class Wire {
  readonly sinks: SideSink[] = [];
  full = false;

  constructor(readonly out: ByteSink) {
    out.on("drain", () => {
      this.full = false;
      for (const sink of this.sinks) sink.emit("drain");
    });
    out.on("error", () => {
      for (const sink of this.sinks) sink.emit("error");
    });
  }
  write(bytes: Uint8Array): void {
    if (!this.out.write(bytes)) this.full = true;
  }
}

/** A source that never says anything: the successor's stderr, which is the conductor's. */
const NO_STDERR: ByteSource = { start() {}, pause() {}, resume() {}, stop() {} };

/** The conductor's connection, split into the client's side and the successor ("agent"). */
export class ChainLink {
  readonly clientInput: SideSource;
  readonly clientOutput: SideSink;
  readonly agent: AgentProcess;
  readonly #agentOutput: SideSource;
  readonly #input: ByteSource;
  readonly #log: (line: string) => void;
  #generation: Generation | null = null;
  /** The proxy initialization's id (idKey), until its answer went out. */
  #initId: string | null = null;
  /** Requests wrapped toward the successor: this layer's id (idKey) → the proxy's id. */
  readonly #wrapped = new Map<string, JsonRpcId>();
  #nextId = 1;
  #reading = false;
  #held = false;
  #exit: AgentExit | null = null;
  #exited: (exit: AgentExit) => void = () => {};
  readonly #lines = new Lines();

  constructor(input: ByteSource, output: ByteSink, log: (line: string) => void) {
    this.#input = input;
    this.#log = log;
    const wire = new Wire(output);
    const changed = () => this.#changed();
    this.clientInput = new SideSource(changed);
    this.#agentOutput = new SideSource(changed);
    this.clientOutput = new SideSink(wire, (line) => this.#toClient(line));
    const toAgent = new SideSink(wire, (line) => this.#toAgent(line), () => this.#end(0, null));
    const exited = new Promise<AgentExit>((resolve) => (this.#exited = resolve));
    const exit = () => this.#exit;
    this.agent = {
      pid: undefined,
      get exitCode() {
        return exit()?.code ?? null;
      },
      get signalCode() {
        return exit()?.signal ?? null;
      },
      kill: (signal) => this.#end(null, signal),
      stdin: toAgent,
      stdout: this.#agentOutput,
      stderr: NO_STDERR,
      exited: () => exited,
    };
  }

  /** The generation the conductor initialized this link with; null before it did. */
  get generation(): Generation | null {
    return this.#generation;
  }

  /** The successor is gone: the chain ended (status 0) or a signal stopped turnguard. */
  #end(code: number | null, signal: string | null): void {
    if (this.#exit) return;
    this.#exit = { code, signal };
    this.#exited(this.#exit);
  }

  /** Reads the connection once both sides listen; holds it while either side is paused. */
  #changed(): void {
    if (!this.#reading) {
      if (!this.clientInput.started || !this.#agentOutput.started) return;
      this.#reading = true;
      this.#input.start((chunk) => this.#fromConductor(chunk), () => this.#conductorEnded());
    }
    const hold = this.clientInput.paused || this.#agentOutput.paused;
    if (hold === this.#held) return;
    this.#held = hold;
    if (hold) this.#input.pause();
    else this.#input.resume();
  }

  #fromConductor(chunk: Uint8Array): void {
    this.#lines.push(chunk, (line) => this.#route(line));
  }

  /** The conductor closed the connection: both sides end, the client's first. */
  #conductorEnded(): void {
    this.#lines.end((line) => this.#route(line));
    this.clientInput.end();
    this.#agentOutput.end();
    this.#end(0, null);
  }

  /** One line from the conductor, to the side it belongs to. */
  #route(line: Uint8Array): void {
    const value = parse(line);
    const message = value === undefined ? null : toMessage(value);
    if (message === null || !isObject(value)) return this.clientInput.deliver(line);
    const inner = unwrap(message);
    if (inner) {
      const out: JsonObject = inner.kind === "request"
        ? { jsonrpc: "2.0", id: inner.id, method: inner.method }
        : { jsonrpc: "2.0", method: inner.method };
      if (inner.params !== undefined) out.params = inner.params;
      return this.#agentOutput.deliver(encodeLine(out, "\n"));
    }
    if (message.kind === "result" || message.kind === "error") {
      const key = idKey(message.id);
      if (this.#wrapped.has(key)) {
        const id = this.#wrapped.get(key)!;
        this.#wrapped.delete(key);
        return this.#agentOutput.deliver(encodeLine({ ...value, id }, "\n"));
      }
      return this.clientInput.deliver(line);
    }
    if (this.#generation === null && isInitialize(message)) {
      this.#generation = proxyInitOf(message) ?? "meta";
      this.#log(generationText(this.#generation));
      if (proxyInitOf(message) === null) {
        this.#log("initialize carried no _meta.proxy: answered as a proxy all the same");
      }
      if (message.kind === "request") this.#initId = idKey(message.id);
      if (message.method !== "initialize") {
        // The proxy forwards what it is given: the successor is sent `initialize` (the RFD).
        return this.clientInput.deliver(encodeLine({ ...value, method: "initialize" }, "\n"));
      }
    }
    this.clientInput.deliver(line);
  }

  /** A line the proxy writes toward the successor, wrapped as the generation says. */
  #toAgent(line: Uint8Array): Uint8Array | null {
    const value = parse(line);
    const message = value === undefined ? null : toMessage(value);
    if (message === null) {
      if (!isBlank(line)) {
        this.#log("a line toward the successor is not a JSON-RPC message: dropped");
      }
      return null;
    }
    if (message.kind === "result" || message.kind === "error") return line;
    const generation = this.#generation ?? "meta";
    if (message.kind === "notification") {
      return encodeLine(wrap(generation, undefined, message.method, message.params), "\n");
    }
    const id = `${WRAPPED_ID_PREFIX}${this.#nextId++}`;
    this.#wrapped.set(idKey(id), message.id);
    return encodeLine(wrap(generation, id, message.method, message.params), "\n");
  }

  /** A line the proxy writes toward the client: as it is, but the initialization's answer. */
  #toClient(line: Uint8Array): Uint8Array | null {
    if (this.#initId === null || this.#generation !== "meta") return line;
    const value = parse(line);
    const message = value === undefined ? null : toMessage(value);
    if (message?.kind !== "result" || idKey(message.id) !== this.#initId) return line;
    this.#initId = null;
    return encodeLine({ ...message.raw, result: acceptedInit("meta", message.result) }, "\n");
  }
}

/** A line's JSON value; undefined when it is not JSON. */
function parse(line: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(line));
  } catch {
    return undefined;
  }
}

function isBlank(line: Uint8Array): boolean {
  return line.every((b) => b === 0x20 || b === 0x09 || b === 0x0d || b === LF);
}
