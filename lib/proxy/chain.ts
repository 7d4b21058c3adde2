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
import { type LineSink, lineSink } from "../io/output.ts";
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
import { DEFAULT_INSPECT_LIMIT, LineSplitter, type Segment } from "../acp/lines.ts";
import { runWithAgent } from "./proxy.ts";
import { Guard } from "./relay.ts";

const decoder = new TextDecoder();
const LF = 0x0a;

/**
 * The longest line on the conductor's connection that is read, as a multiple of the
 * proxy's inspection limit (`--max-line-bytes`): an envelope around a line the proxy would
 * still read, with room to spare. The envelope is read from whole lines, so a line is held
 * until its end; a longer one is not held but dropped as it passes (it can be neither
 * routed nor unwrapped unread), and said on stderr. The lines the proxy writes onto the
 * connection come from lines within it (or are turnguard's own), so the sides' sinks, held
 * to the same bound, hold no more.
 */
export const CHAIN_LINE_FACTOR = 2;

/** ACP's cancellation of a request (agent-client-protocol schema/v1/meta.unstable.json). */
const CANCEL_REQUEST = "$/cancel_request";

/** The prefix of the ids this layer gives the requests it wraps (see `ChainLink`). */
const WRAPPED_ID_PREFIX = "turnguard-successor-";

/**
 * Runs the proxy as a chain link on the conductor's connection (`opts.input`,
 * `opts.output`) until the conductor ends the chain; resolves with turnguard's exit status.
 */
export function runChainProxy(opts: ProxyOptions): Promise<ProxyResult> {
  const stderr = lineSink(opts.stderr);
  const log = (line: string) => {
    if (opts.verbose) stderr.line(`turnguard: chain: ${line}`);
  };
  const { profile } = opts;
  const unavailable = "the agent's exit status and stderr are the conductor's, unavailable here";
  log(
    profile.logs.length > 0 || (opts.readers?.length ?? 0) > 0
      ? `profile ${profile.name}: the agent's logs and session records are read; ${unavailable}`
      : `profile ${profile.name} names no logs or session records (--profile NAME names the agent's): only the wire is read; ${unavailable}`,
  );
  const limit = CHAIN_LINE_FACTOR * (opts.inspectLimit ?? DEFAULT_INSPECT_LIMIT);
  const link = new ChainLink(byteSource(opts.input), opts.output, stderr, log, limit);
  return runWithAgent(
    { ...opts, input: link.clientInput, output: link.clientOutput },
    link.agent,
  );
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
  readonly #lines: LineSplitter;
  readonly #drain: (() => void)[] = [];
  readonly #error: (() => void)[] = [];

  constructor(
    readonly wire: Wire,
    readonly line: (line: Uint8Array) => Uint8Array | null,
    readonly ended: () => void = () => {},
  ) {
    wire.sinks.push(this);
    this.#lines = new LineSplitter(wire.lineLimit);
  }

  write(bytes: Uint8Array): boolean {
    this.#lines.push(bytes, (segment) => this.#out(segment.bytes));
    return !this.wire.full;
  }
  end(): void {
    this.#lines.end((segment) => this.#out(segment.bytes));
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

  /** `lineLimit`: the longest line a side's sink holds whole (see CHAIN_LINE_FACTOR). */
  constructor(readonly out: ByteSink, readonly lineLimit: number) {
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
class ChainLink {
  readonly clientInput: SideSource;
  readonly clientOutput: SideSink;
  readonly agent: AgentProcess;
  readonly #agentOutput: SideSource;
  readonly #input: ByteSource;
  readonly #log: (line: string) => void;
  #generation: Generation | null = null;
  /** The proxy initialization's id (idKey), until its answer went out. */
  #initId: string | null = null;
  /** Requests wrapped toward the successor: this layer's id → the proxy's id. */
  readonly #wrapped = new Map<string, JsonRpcId>();
  #nextId = 1;
  #reading = false;
  #held = false;
  #exit: AgentExit | null = null;
  #exited: (exit: AgentExit) => void = () => {};
  /** The conductor's lines, each whole (the envelope is read from the whole line). */
  readonly #lines: LineSplitter;
  /** Bytes of the over-long conductor line being dropped. */
  #dropped = 0;
  readonly #stderr: Pick<LineSink, "line">;
  readonly #guard: Guard;

  constructor(
    input: ByteSource,
    output: ByteSink,
    stderr: Pick<LineSink, "line">,
    log: (line: string) => void,
    lineLimit: number,
  ) {
    this.#input = input;
    this.#log = log;
    this.#stderr = stderr;
    this.#lines = new LineSplitter(lineLimit);
    const wire = new Wire(output, lineLimit);
    const changed = () => this.#changed();
    this.clientInput = new SideSource(changed);
    this.#agentOutput = new SideSource(changed);
    // A line whose reading fails goes to the client as it is; toward the successor it cannot
    // be wrapped and is dropped (the guard says it once on stderr).
    const guard = this.#guard = new Guard(stderr);
    this.clientOutput = new SideSink(
      wire,
      (line) => guard.run("a line toward the client", () => this.#toClient(line), line),
    );
    const toAgent = new SideSink(
      wire,
      (line) => guard.run("a line toward the successor", () => this.#toAgent(line), null),
      () => this.#end(0, null),
    );
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
    this.#lines.push(chunk, (segment) => this.#segment(segment));
  }

  /** A whole line is routed; the bytes of one past the line limit are dropped, and said. */
  #segment(segment: Segment): void {
    if (segment.kind !== "pass") return this.#route(segment.bytes);
    this.#dropped += segment.bytes.length;
    if (!segment.end) return;
    this.#stderr.line(
      `turnguard: chain: a line from the conductor of ${this.#dropped} bytes was dropped: ` +
        `longer than ${this.#lines.limit} bytes, it cannot be routed unread`,
    );
    this.#dropped = 0;
  }

  /** The conductor closed the connection: both sides end, the client's first. */
  #conductorEnded(): void {
    this.#lines.end((segment) => this.#segment(segment));
    this.clientInput.end();
    this.#agentOutput.end();
    this.#end(0, null);
  }

  /** One line from the conductor, to the side it belongs to (as it is, if reading it fails). */
  #route(line: Uint8Array): void {
    const [side, bytes] = this.#guard.run(
      "a line from the conductor",
      () => this.#place(line),
      [this.clientInput, line] as const,
    );
    side.deliver(bytes);
  }

  /** Which side a line from the conductor goes to, and its bytes there. */
  #place(line: Uint8Array): readonly [SideSource, Uint8Array] {
    const value = parse(line);
    const message = value === undefined ? null : toMessage(value);
    if (message === null || !isObject(value)) return [this.clientInput, line];
    const inner = unwrap(message);
    if (inner) {
      const out: JsonObject = inner.kind === "request"
        ? { jsonrpc: "2.0", id: inner.id, method: inner.method }
        : { jsonrpc: "2.0", method: inner.method };
      if (inner.params !== undefined) out.params = inner.params;
      return [this.#agentOutput, encodeLine(out, "\n")];
    }
    if (message.kind === "result" || message.kind === "error") {
      const key = message.id;
      if (typeof key === "string" && this.#wrapped.has(key)) {
        const id = this.#wrapped.get(key)!;
        this.#wrapped.delete(key);
        return [this.#agentOutput, encodeLine({ ...value, id }, "\n")];
      }
      return [this.clientInput, line];
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
        return [this.clientInput, encodeLine({ ...value, method: "initialize" }, "\n")];
      }
    }
    return [this.clientInput, line];
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
    if (message.kind === "notification" && generation === "rfd") {
      // The RFD: a wrapped request is cancelled by its envelope's id, on this hop only.
      const cancelled = this.#cancelOf(message.method, message.params);
      if (cancelled) return encodeLine(cancelled, "\n");
    }
    if (message.kind === "notification") {
      return encodeLine(wrap(generation, undefined, message.method, message.params), "\n");
    }
    const id = `${WRAPPED_ID_PREFIX}${this.#nextId++}`;
    this.#wrapped.set(id, message.id);
    return encodeLine(wrap(generation, id, message.method, message.params), "\n");
  }

  /** `$/cancel_request` of a request this layer wrapped, under the envelope's id; else null. */
  #cancelOf(method: string, params: unknown): JsonObject | null {
    if (method !== CANCEL_REQUEST || !isObject(params) || !("id" in params)) return null;
    for (const [outer, inner] of this.#wrapped) {
      if (inner === params.id) {
        return { jsonrpc: "2.0", method, params: { ...params, id: outer } };
      }
    }
    return null;
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
