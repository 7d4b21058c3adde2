/**
 * `turnguard proxy`: the imperative shell of the transparent ACP stdio proxy. Spawns the
 * agent, passes every byte through in both directions (lines are split, never decoded,
 * unless they can matter), tracks requests and turns, and answers each `session/prompt`
 * with the turn's true outcome: the agent's own response when it is true, a rewritten one
 * when the agent hid a failure, an error when the agent fell silent or died. The pure
 * parts live in lib/acp/.
 */
import { Buffer } from "node:buffer";
import type { Readable, Writable } from "node:stream";
import { errorText } from "../errors.ts";
import { commandProblem } from "../agent/spawn_problem.ts";
import { answerUnstarted } from "./unstarted.ts";
import { type ConcludeInput, exitMessage, type TurnEnd } from "./conclude.ts";
import { endTurn, publishArmed, type TurnEndInput, type TurnEndSteps } from "./turn_end.ts";
import {
  encodeLine,
  encodeResponse,
  idKey,
  type JsonRpcId,
  type Message,
  type Opaque,
  parseBatch,
  readMessage,
  sessionIdOf,
  startsArray,
} from "../acp/jsonrpc.ts";
import {
  DEFAULT_INSPECT_LIMIT,
  joinBytes,
  lineEnding,
  LineSplitter,
  type Segment,
} from "../acp/lines.ts";
import { LineOutput } from "./output.ts";
import { peekUpdate } from "../acp/peek.ts";
import {
  idOfLexeme,
  isRequestPrefix,
  isResponsePrefix,
  PREFIX_BYTES,
  type PrefixScan,
  scanPrefix,
} from "../acp/prefix.ts";
import type { TextKeeping } from "./reply_text.ts";
import { crashData, errorResponse, overloadData } from "./rewrite.ts";
import { PendingRequests } from "../acp/tracker.ts";
import {
  observeUninspected,
  observeUpdate,
  observeUpdateLine,
  sessionIdInPrefix,
  type Turn,
  Turns,
} from "./turns.ts";
import type { ScheduledRetry } from "../retry/policy.ts";
import { RetryWaits } from "../retry/waits.ts";
import { findLogCause, snapshotProfileLogs } from "../cause/log_cause.ts";
import type { LoadedRecordReader } from "../plugin/api.ts";
import {
  DEFAULT_SETTLE_MS,
  readSessionRecords,
  type RecordsRead,
  type RecordsSnapshot,
  snapshotSessionRecords,
} from "../cause/session_records.ts";
import type { LogFs } from "../io/logfs.ts";
import { Tail } from "../text/byte_window.ts";
import { type AgentLaunch, STDERR_TAIL_BYTES } from "../run/run.ts";
import {
  type AgentProcess,
  type ByteSink,
  type ByteSource,
  byteSource,
  startAgent,
} from "./agent_io.ts";
import {
  forwardSignals,
  forwardSignalsFromSpawn,
  killGroup,
  signalExitCode,
  stopGroupOnExit,
} from "../agent/signals.ts";
import { timerDelay } from "../io/timer_delay.ts";
import { formatDuration, lastLines } from "../text/text.ts";

/** Default grace periods: after EOF before SIGTERM (and again before SIGKILL), and after a
 * timeout's `session/cancel` before the client is answered. */
export const DEFAULT_GRACE_MS = 5000;

/**
 * How many requests of each side may wait for an answer at once: each is remembered (to be
 * answered if the agent dies), so the cap bounds that memory. A request past it is answered
 * by turnguard and not forwarded.
 */
export const DEFAULT_MAX_PENDING = 65_536;

/** How one proxy is wired to the world; tests pass their own streams and settings. */
export interface ProxyOptions extends AgentLaunch {
  /**
   * The client's side: its requests come in on `input`, the agent's bytes go to `output`
   * (Node streams, or the Bun-native ones of lib/proxy/agent_io.ts).
   */
  input: Readable | ByteSource;
  output: ByteSink;
  /** Where the agent's stderr (and turnguard's verbose lines) go. */
  stderr: Writable;
  /** Lines longer than this are passed through without being inspected. */
  inspectLimit?: number;
  /** `--turn-timeout`: a turn silent this long is cancelled and answered with an error. */
  turnTimeoutMs?: number | null;
  /** Grace periods (EOF → SIGTERM → SIGKILL; timeout cancel → answer). */
  graceMs?: number;
  /**
   * Whether each turn keeps its message text (64 KiB) for the Outcome's `reply.text` and
   * the hooks: only when something reads it (journal, outcome file, publish fallback).
   * Otherwise characters are only counted, plus the head a failure notice fits in when
   * the profile has text anchors, and Outcomes carry no `reply.text`. Default true.
   */
  keepReplyText?: boolean;
  /** `--rewrite-errors`. */
  rewriteErrors?: boolean;
  /** `--strict-turns`: an incomplete answer ended as `end_turn` is answered as an error. */
  strictTurns?: boolean;
  /** The profile's session record readers (docs/EVIDENCE.md). */
  readers?: readonly LoadedRecordReader[];
  /**
   * What each turn's end does besides answering the client (lib/proxy/turn_end.ts): the
   * publish fallback, the journal and its retries, telemetry, the outcome file.
   */
  turnEnd?: TurnEndSteps;
  /** Where retries wait (SIGUSR1 runs them now while the proxy runs). */
  retryWaits?: RetryWaits;
  /** `--verbose`: turnguard's diagnostics, one line each. */
  verbose?: boolean;
  now?: () => number;
  fs?: LogFs;
  /** When the agent cannot start: how long to wait for the client's first request. */
  firstRequestWaitMs?: number;
  /** Forward SIGINT/SIGTERM/SIGHUP/SIGQUIT to the agent (off in in-process tests). */
  forwardSignals?: boolean;
  /** Requests of each side waiting at once (default DEFAULT_MAX_PENDING). */
  maxPending?: number;
}

/** How the proxy ended. */
export interface ProxyResult {
  /** The agent's exit status (128+N for signal N; 127/126 when it could not start). */
  exitCode: number;
  /** The one-line error when the agent could not be started. */
  spawnError?: string;
}

/** What to do with one complete line. */
type Verdict =
  | null
  | { replace: Uint8Array | null }
  | { later: Promise<Uint8Array | null> };

const PASS: Verdict = null;
const DROP: Verdict = { replace: null };
/** Pieces of one chunk are copied into one write up to this size, written apart beyond. */
const JOIN_MAX_BYTES = 16 * 1024;
const ID_KEY = Buffer.from('"id"');
const METHOD_KEY = Buffer.from('"method"');
const decoder = new TextDecoder();
const NEWLINE = new Uint8Array([0x0a]);

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** A turn being cut short for silence: cancel sent, waiting for the grace period. */
interface Expiry {
  timer: ReturnType<typeof setTimeout>;
  /** How long the turn had been silent when it was cancelled. */
  silentMs: number;
}

/** A failed turn whose retry waits: the client's request stays unanswered meanwhile. */
interface WaitingRetry {
  turn: Turn;
  decision: ScheduledRetry;
  /** The failed attempt's response, sent to the client if the retry never runs. */
  response: Uint8Array | null;
}

/**
 * A line too long (or nested too deeply) to inspect, while it passes: its first bytes,
 * and what they tell.
 */
interface LongLine {
  /** Why it is not read: "longer than the inspection limit", "nested too deeply". */
  why: string;
  prefix: Uint8Array[];
  bytes: number;
  /** Set once PREFIX_BYTES (or the whole line) came. */
  scan: PrefixScan | null;
  /** The turn whose output it is (agent lines), once known. */
  turn: Turn | undefined;
}

/** Keeps a long line's piece up to PREFIX_BYTES; true when the prefix is complete now. */
function keepPrefix(long: LongLine, piece: Uint8Array, end: boolean): boolean {
  if (long.scan !== null) return false;
  const room = PREFIX_BYTES - long.bytes;
  if (room > 0) {
    const part = piece.subarray(0, room).slice();
    long.prefix.push(part);
    long.bytes += part.length;
  }
  return end || long.bytes >= PREFIX_BYTES;
}

function scanLong(long: LongLine): string {
  const text = decoder.decode(joinBytes(long.prefix, long.bytes));
  long.scan = scanPrefix(text);
  long.prefix = [];
  return text;
}

/** The id lexeme a request line writes (looked for in its first bytes). */
function idLexemeOf(line: Uint8Array, id: JsonRpcId): string {
  const lexeme = scanPrefix(decoder.decode(line.subarray(0, PREFIX_BYTES))).idLexeme;
  return lexeme !== null && idOfLexeme(lexeme) === id ? lexeme : JSON.stringify(id);
}

const TOO_LONG = "longer than the inspection limit";
const TOO_DEEP = "nested too deeply to read";
const newLong = (why = TOO_LONG): LongLine => ({
  why,
  prefix: [],
  bytes: 0,
  scan: null,
  turn: undefined,
});

/** A turn's key among waiting retries: session and turn number. */
const retryKey = (turn: Turn) => `${turn.sessionId}\n${turn.turn}`;

/** Runs the proxy until the agent exits; resolves with turnguard's exit status. */
export async function runProxy(opts: ProxyOptions): Promise<ProxyResult> {
  // Signals that come while the agent starts reach it (and its group) too.
  const early: string[] = [];
  const forwarding = opts.forwardSignals === false
    ? { attach: () => {}, stop: () => {} }
    : forwardSignalsFromSpawn((signal) => early.push(signal));
  // A process group of its own: stopped as a whole (see signals.ts).
  const child = await startAgent(opts);
  if (child instanceof Error) {
    forwarding.stop();
    return await spawnFailure(opts, child);
  }
  forwarding.attach(child);
  const stopEarly = forwarding.stop;
  // The early forwarding stops only once the proxy's own is in place: no gap in which a
  // signal would kill turnguard and leave the agent behind.
  return await new Proxy(opts, child, early).run(stopEarly);
}

/** The agent did not start: the client's first requests get the reason (proxy/unstarted.ts). */
async function spawnFailure(opts: ProxyOptions, err: unknown): Promise<ProxyResult> {
  const { exitCode, message } = commandProblem(opts.command, err, opts.env, opts.cwd);
  await answerUnstarted({
    input: byteSource(opts.input),
    output: opts.output,
    message: `turnguard: the agent could not be started: ${message}`,
    exitCode,
    waitMs: opts.firstRequestWaitMs,
  });
  return { exitCode, spawnError: message };
}

/** One proxied agent process and its client. */
class Proxy {
  readonly #opts: ProxyOptions;
  readonly #child: AgentProcess;
  readonly #input: ByteSource;
  readonly #now: () => number;
  readonly #steps: TurnEndSteps;
  /** How much message text each turn keeps (see ProxyOptions.keepReplyText). */
  readonly #keepText: TextKeeping;
  readonly #toAgent: LineOutput;
  readonly #toClient: LineOutput;
  readonly #fromClient: LineSplitter;
  readonly #fromAgent: LineSplitter;
  /** Requests the client sent to the agent. */
  readonly #clientPending: PendingRequests;
  /** Requests the agent sent to the client. */
  readonly #agentPending: PendingRequests;
  readonly #turns = new Turns();
  readonly #expiring = new Map<Turn, Expiry>();
  /** Failed turns whose retry waits, by `retryKey`; the client's request is held. */
  readonly #retrying = new Map<string, WaitingRetry>();
  readonly #waits: RetryWaits;
  #clientGone = false;
  readonly #stderrTail = new Tail(STDERR_TAIL_BYTES);
  readonly #inFlight = new Set<Promise<void>>();
  #signalled = false;
  #ticker: ReturnType<typeof setInterval> | null = null;
  #eofTimers: ReturnType<typeof setTimeout>[] = [];
  #agentGone = false;
  /** The agent's / the client's line too long to inspect, while it passes. */
  #agentLong: LongLine | null = null;
  #clientLong: LongLine | null = null;
  /** A line's reading threw once (said once on stderr; see `#guard`). */
  #guardFailed = false;

  /** `early`: the signals forwarded while the agent started. */
  constructor(opts: ProxyOptions, child: AgentProcess, early: readonly string[] = []) {
    this.#opts = opts;
    this.#child = child;
    this.#clientPending = new PendingRequests(opts.maxPending ?? DEFAULT_MAX_PENDING);
    this.#agentPending = new PendingRequests(opts.maxPending ?? DEFAULT_MAX_PENDING);
    const input = this.#input = byteSource(opts.input);
    this.#signalled = early.length > 0;
    this.#now = opts.now ?? Date.now;
    this.#waits = opts.retryWaits ?? new RetryWaits();
    this.#steps = opts.turnEnd ?? {};
    this.#keepText = opts.keepReplyText !== false
      ? "reply"
      : opts.classifier.text.length > 0
      ? "notice"
      : "none";
    const limit = opts.inspectLimit ?? DEFAULT_INSPECT_LIMIT;
    this.#fromClient = new LineSplitter(limit);
    this.#fromAgent = new LineSplitter(limit);
    this.#toAgent = new LineOutput(child.stdin, (pause) => {
      if (pause) input.pause();
      else if (!this.#agentGone) input.resume();
    });
    this.#toClient = new LineOutput(opts.output, (pause) => {
      if (pause) child.stdout.pause();
      else child.stdout.resume();
    });
  }

  async run(stopEarly: () => void = () => {}): Promise<ProxyResult> {
    const { stderr } = this.#opts;
    const input = this.#input;
    const child = this.#child;
    // Resolves once the agent exited and its output ended (or, held open by a grandchild,
    // stayed idle while nothing held it back): all of its bytes have been handed over.
    const exited = child.exited();
    const stopSignals = this.#opts.forwardSignals === false
      ? () => {}
      : forwardSignals(child, (signal) => {
        this.#signalled = true;
        this.#log(`forwarded ${signal} to the agent`);
      });
    stopEarly();
    const stopGroup = stopGroupOnExit(child);

    child.stderr.start((chunk) => {
      this.#stderrTail.push(chunk);
      stderr.write(chunk);
    });
    child.stdout.start((chunk) => {
      // One clock reading per chunk for its session/update lines, taken by the first of
      // them (inside the pump's guard).
      let now: number | null = null;
      this.#pump(
        this.#fromAgent,
        chunk,
        this.#toClient,
        (line) => this.#fromAgentLine(line),
        (piece, end) => this.#agentPassing(piece, end),
        (bytes, start, end) => this.#agentUpdate(bytes, start, end, now ??= this.#now()),
      );
    });
    const onClientData = (chunk: Uint8Array) =>
      this.#pump(
        this.#fromClient,
        chunk,
        this.#toAgent,
        (line) => this.#fromClientLine(line),
        (piece, end) => this.#clientPassing(piece, end),
      );
    input.start(onClientData, () => void this.#clientClosed());
    this.#opts.output.on("error", () => {}); // the client stopped reading: keep going
    if (this.#opts.turnTimeoutMs) this.#startTicker(this.#opts.turnTimeoutMs);
    const unlisten = this.#opts.retryWaits ? this.#waits.listen() : () => {};

    const exit = await exited;
    this.#agentGone = true;
    input.stop();
    stopSignals();
    for (const t of this.#eofTimers) clearTimeout(t);
    if (this.#ticker) clearInterval(this.#ticker);
    for (const { timer } of this.#expiring.values()) clearTimeout(timer);

    this.#fromAgent.end((segment) =>
      this.#route(segment, this.#toClient, (l) => this.#fromAgentLine(l))
    );
    this.#stopRetries(`the agent exited`);
    unlisten();
    this.#answerOrphans(exit.code, exit.signal);
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    this.#toClient.finish();
    await this.#toClient.flushed();
    stopGroup();
    const exitCode = exit.signal !== null ? signalExitCode(exit.signal) : exit.code ?? 1;
    this.#log(
      `agent exited with ${exit.signal !== null ? `signal ${exit.signal}` : `status ${exit.code}`}`,
    );
    return { exitCode };
  }

  /**
   * Splits a chunk and forwards it. Untouched adjacent lines go out as one view of the
   * chunk, so a chunk costs one or two writes, not one per line; small pieces are joined.
   * `quick` looks at a line inside the chunk by its offsets first (no view of it is made):
   * true when it passes as it is, false to have it inspected.
   */
  #pump(
    splitter: LineSplitter,
    chunk: Uint8Array,
    out: LineOutput,
    inspect: (line: Uint8Array) => Verdict,
    passing: (piece: Uint8Array, end: boolean) => void = () => {},
    quick?: (bytes: Uint8Array, start: number, end: number) => boolean,
  ): void {
    // Pieces to write, and the current run of adjacent bytes of this chunk (kept as
    // offsets until it is cut: adjacent bytes of the chunk are in their order).
    const pieces: Uint8Array[] = [];
    let size = 0;
    let inRun = false;
    let runStart = 0;
    let runEnd = 0;
    const cutRun = () => {
      if (!inRun) return;
      pieces.push(chunk.subarray(runStart, runEnd));
      inRun = false;
    };
    const addRun = (at: number, length: number) => {
      if (inRun && runEnd === at) {
        runEnd += length;
      } else {
        cutRun();
        inRun = true;
        runStart = at;
        runEnd = at + length;
      }
    };
    const flush = () => {
      cutRun();
      if (pieces.length === 0) return;
      if (pieces.length === 1) out.write(pieces[0]);
      else if (size <= JOIN_MAX_BYTES) out.write(joinBytes(pieces, size));
      else for (const piece of pieces) out.write(piece);
      pieces.length = 0;
      size = 0;
    };
    splitter.push(
      chunk,
      (segment) => {
        if (segment.kind === "pass") {
          this.#guard("a long line", () => passing(segment.bytes, segment.end), undefined);
        }
        const verdict = segment.kind === "line"
          ? this.#guard("a line", () => inspect(segment.bytes), PASS)
          : PASS;
        if (verdict === null) {
          const length = segment.bytes.length;
          size += length;
          if (segment.at === -1) {
            cutRun();
            pieces.push(segment.bytes);
          } else {
            addRun(segment.at, length);
          }
          return;
        }
        flush();
        this.#apply(verdict, out);
      },
      quick && ((start, end) => {
        let passed: boolean;
        try {
          passed = quick(chunk, start, end);
        } catch (err) {
          this.#guardFailure("a line", err);
          passed = true;
        }
        if (passed) size += end - start, addRun(start, end - start);
        return passed;
      }),
    );
    flush();
  }

  /** Forwards one segment (used when a stream ends). */
  #route(segment: Segment, out: LineOutput, inspect: (line: Uint8Array) => Verdict): void {
    const verdict = segment.kind === "line"
      ? this.#guard("a line", () => inspect(segment.bytes), PASS)
      : PASS;
    if (verdict === null) out.write(segment.bytes);
    else this.#apply(verdict, out);
  }

  #apply(verdict: Exclude<Verdict, null>, out: LineOutput): void {
    if ("later" in verdict) out.writeLater(verdict.later);
    else if (verdict.replace) out.write(verdict.replace);
  }

  /**
   * A piece of an agent line too long to inspect. Its first PREFIX_BYTES tell its kind:
   * a response ends its request (unread); other lines count as output of the turn of the
   * session they name, or of the only running turn when they name none.
   */
  #agentPassing(piece: Uint8Array, end: boolean, why = TOO_LONG): void {
    const long = this.#agentLong ??= newLong(why);
    const now = this.#now();
    if (keepPrefix(long, piece, end)) {
      const text = scanLong(long);
      const scan = long.scan!;
      this.#log(`an agent line ${long.why} is passing through unread`);
      if (isRequestPrefix(scan)) {
        const id = idOfLexeme(scan.idLexeme!);
        this.#agentPending.add(id, scan.method!, sessionIdInPrefix(text), scan.idLexeme!);
      }
      if (!isResponsePrefix(scan) && this.#turns.size > 0) {
        const sessionId = sessionIdInPrefix(text);
        long.turn = sessionId !== null
          ? this.#turns.forSession(sessionId)
          : this.#turns.size === 1
          ? this.#turns.all()[0]
          : undefined;
        if (long.turn) observeUninspected(long.turn, now);
      }
    } else if (long.turn) {
      long.turn.lastActivityAt = now;
    }
    if (!end) return;
    this.#agentLong = null;
    const scan = long.scan!;
    if (isResponsePrefix(scan)) {
      this.#unreadResponse(idOfLexeme(scan.idLexeme!), scan.keys.has("error"), long.why, now);
    }
  }

  /**
   * An agent line nested too deeply to read: only its envelope is looked at (a response
   * ends its request unread, a request is tracked, anything else counts as output); when
   * not even that could be parsed, its first bytes tell, as for a line too long.
   */
  #agentOpaque(opaque: Opaque, line: Uint8Array): Verdict {
    const message = opaque.message;
    if (message === null) {
      this.#agentPassing(line, true, TOO_DEEP);
      return PASS;
    }
    this.#log(`an agent line ${TOO_DEEP} is passing through unread`);
    const now = this.#now();
    if (message.kind === "result" || message.kind === "error") {
      this.#unreadResponse(message.id, message.kind === "error", TOO_DEEP, now);
      return PASS;
    }
    const sessionId = sessionIdOf(message.params);
    if (message.kind === "request") {
      if (this.#agentPending.full) return this.#refuse("agent", message.id, line);
      this.#agentPending.add(message.id, message.method, sessionId);
    }
    const turn = sessionId !== null ? this.#turns.forSession(sessionId) : undefined;
    if (turn) observeUninspected(turn, now);
    return PASS;
  }

  /**
   * The agent answered a client request with a line too long to inspect; it went through
   * as it is. Its request is no longer pending, and a turn it answers ends (not rewritten).
   */
  #unreadResponse(id: JsonRpcId, isError: boolean, why: string, now: number): void {
    const request = this.#clientPending.take(id);
    if (!request) return;
    if (request.answered) {
      this.#log(`the agent's late response to request ${idKey(id)} was ${why}; it went through`);
      return;
    }
    const turn = this.#turns.forRequest(id);
    if (!turn) return;
    this.#turns.end(turn);
    const expiry = this.#expiring.get(turn);
    if (expiry) clearTimeout(expiry.timer), this.#expiring.delete(turn);
    const note = `the agent's response was ${why}: forwarded unread, not rewritten`;
    const end: TurnEnd = isError
      ? { kind: "error", error: { code: null, message: note }, response: {} }
      : { kind: "result", result: {}, response: {} };
    this.#inject(
      this.#endTurn(
        { conclude: this.#concludeInput(turn, end, now), line: null, unread: note },
        null,
      ),
    );
  }

  // ---------------------------------------------------------------- client → agent

  /**
   * A piece of a client line too long to inspect: a request whose id and method are in
   * its first PREFIX_BYTES is tracked (as a plain request, never a turn); a response ends
   * the agent's request.
   */
  #clientPassing(
    piece: Uint8Array,
    end: boolean,
    why = TOO_LONG,
    whole: Uint8Array | null = null,
  ): void {
    const long = this.#clientLong ??= newLong(why);
    if (keepPrefix(long, piece, end)) {
      const text = scanLong(long);
      const scan = long.scan!;
      this.#log(`a client line ${long.why} is passing through unread`);
      if (isRequestPrefix(scan)) {
        const id = idOfLexeme(scan.idLexeme!);
        const sessionId = sessionIdInPrefix(text);
        this.#clientPending.add(id, scan.method!, sessionId, scan.idLexeme!);
        // A whole line in hand (nested too deeply to parse) can be sent again: a turn.
        if (whole && scan.method === "session/prompt" && sessionId !== null) {
          const request = { kind: "request" as const, id, method: scan.method, params: undefined };
          this.#stopSessionRetries(sessionId, "a new prompt came in the session");
          this.#startTurn(request, sessionId, whole, scan.idLexeme!, this.#now(), undefined);
        }
      } else if (isResponsePrefix(scan)) {
        this.#clientAnswered(idOfLexeme(scan.idLexeme!), this.#now());
      }
    }
    if (end) this.#clientLong = null;
  }

  /**
   * A client line nested too deeply to read: a request is tracked (a `session/prompt`
   * starts a turn from its top-level members; its prompt and `_meta` are not read), a
   * response answers the agent's request.
   */
  #clientOpaque(opaque: Opaque, line: Uint8Array): Verdict {
    const message = opaque.message;
    if (message === null) {
      this.#clientPassing(line, true, TOO_DEEP, line);
      return PASS;
    }
    this.#log(`a client line ${TOO_DEEP} is passing through unread`);
    // Its `_meta` is not read: it may be what nests too deeply.
    if (message.kind === "request") return this.#clientRequest(message, line, this.#now(), false);
    if (message.kind !== "notification") this.#clientAnswered(message.id, this.#now());
    return PASS;
  }

  /**
   * A client request: refused past the in-flight cap, else tracked; a `session/prompt` also
   * starts a turn, with the prompt's `_meta` unless the line was too deep to read it.
   */
  #clientRequest(
    message: Extract<Message, { kind: "request" }>,
    line: Uint8Array,
    now: number,
    readMeta: boolean,
  ): Verdict {
    if (this.#clientPending.full) return this.#refuse("client", message.id, line);
    const sessionId = sessionIdOf(message.params);
    const lexeme = idLexemeOf(line, message.id);
    this.#clientPending.add(message.id, message.method, sessionId, lexeme);
    if (message.method === "session/prompt" && sessionId !== null) {
      this.#stopSessionRetries(sessionId, "a new prompt came in the session");
      const meta = readMeta ? (message.params as Record<string, unknown>)._meta : undefined;
      this.#startTurn(message, sessionId, line, lexeme, now, meta);
    }
    return PASS;
  }

  #fromClientLine(line: Uint8Array): Verdict {
    // A line without a `"method"` key is a response (or not JSON-RPC): it only matters
    // while the agent waits on the client.
    if (this.#agentPending.size === 0 && asBuffer(line).indexOf(METHOD_KEY) === -1) return PASS;
    const message = readMessage(line);
    if (message?.kind === "opaque") return this.#clientOpaque(message, line);
    if (!message) {
      if (startsArray(line)) this.#clientBatch(line);
      return PASS;
    }
    const now = this.#now();
    switch (message.kind) {
      case "request":
        return this.#clientRequest(message, line, now, true);
      case "notification": {
        if (message.method === "session/cancel") {
          const sessionId = sessionIdOf(message.params);
          if (sessionId !== null) this.#stopSessionRetries(sessionId, "the client cancelled");
          const turn = sessionId !== null ? this.#turns.forSession(sessionId) : undefined;
          if (turn) {
            turn.cancelled = true;
            this.#log(`session ${turn.sessionId} turn ${turn.turn}: cancelled by the client`);
          }
        }
        return PASS;
      }
      default: {
        // The client answered one of the agent's requests (e.g. a permission prompt):
        // the silence clock of that session starts again now.
        this.#clientAnswered(message.id, now);
        return PASS;
      }
    }
  }

  /**
   * A batch from the client: its requests are tracked (a `session/prompt` among them as a
   * plain request, not a turn), its responses answer the agent's requests.
   */
  #clientBatch(line: Uint8Array): void {
    const now = this.#now();
    for (const message of parseBatch(line) ?? []) {
      if (message.kind === "request") {
        this.#clientPending.add(message.id, message.method, sessionIdOf(message.params));
      } else if (message.kind !== "notification") {
        this.#clientAnswered(message.id, now);
      }
    }
  }

  /** A batch from the agent: its responses answer the client's requests. */
  #agentBatch(line: Uint8Array): void {
    for (const message of parseBatch(line) ?? []) {
      if (message.kind === "request") {
        this.#agentPending.add(message.id, message.method, sessionIdOf(message.params));
      } else if (message.kind !== "notification") {
        if (!this.#turns.forRequest(message.id)) this.#clientPending.take(message.id);
      }
    }
  }

  /** The client answered the agent's request `id`. */
  #clientAnswered(id: JsonRpcId, now: number): void {
    const request = this.#agentPending.take(id);
    const turn = request?.sessionId ? this.#turns.forSession(request.sessionId) : undefined;
    if (turn) turn.lastActivityAt = now;
  }

  #startTurn(
    message: Extract<Message, { kind: "request" }>,
    sessionId: string,
    line: Uint8Array,
    requestIdLexeme: string,
    now: number,
    promptMeta: unknown,
  ) {
    const turn = this.#turns.start({
      sessionId,
      requestId: message.id,
      requestIdLexeme,
      promptLine: line.slice(),
      promptMeta,
      startedAt: now,
      snapshot: snapshotProfileLogs(this.#opts.profile, this.#opts.env, now, this.#opts.fs),
      records: this.#snapshotRecords(sessionId, now),
      trackToolCalls: publishArmed(this.#steps),
      keepText: this.#keepText,
    });
    this.#log(`session ${sessionId} turn ${turn.turn}: started (request ${idKey(message.id)})`);
    try {
      this.#steps.recorder?.started(
        { session: turn.sessionId, turn: turn.turn },
        { mode: "proxy", agent: this.#opts.profile.name, promptId: turn.requestId },
      );
    } catch (err) {
      this.#log(`recording the turn's start failed: ${errorText(err)}`);
    }
  }

  // ---------------------------------------------------------------- agent → client

  /**
   * A canonical `session/update` line, `bytes[start, end)`, known by its first bytes: it
   * counts as output of its session's running turn, and passes as it is (true). False for
   * any other line (inspected as a whole).
   */
  #agentUpdate(bytes: Uint8Array, start: number, end: number, now: number): boolean {
    const peek = peekUpdate(bytes, start, end);
    if (peek === null) return false;
    const turn = this.#turns.size === 0
      ? undefined
      : this.#turns.forSessionBytes(bytes, peek.idStart, peek.idEnd);
    if (turn) observeUpdateLine(turn, peek, bytes, now);
    return true;
  }

  #fromAgentLine(line: Uint8Array): Verdict {
    // Cheap pre-checks: a canonical session/update is known by its first bytes; any other
    // line without an `"id"` key is a notification (or not JSON-RPC). Notifications only
    // matter while a turn runs.
    if (this.#agentUpdate(line, 0, line.length, this.#now())) return PASS;
    if (this.#turns.size === 0 && asBuffer(line).indexOf(ID_KEY) === -1) return PASS;
    const message = readMessage(line);
    if (message?.kind === "opaque") return this.#agentOpaque(message, line);
    if (!message) {
      if (startsArray(line)) this.#agentBatch(line);
      return PASS;
    }
    const now = this.#now();
    switch (message.kind) {
      case "notification": {
        if (message.method !== "session/update") return PASS;
        const sessionId = sessionIdOf(message.params);
        const turn = sessionId !== null ? this.#turns.forSession(sessionId) : undefined;
        if (turn) observeUpdate(turn, (message.params as Record<string, unknown>).update, now);
        return PASS;
      }
      case "request": {
        if (this.#agentPending.full) return this.#refuse("agent", message.id, line);
        const sessionId = sessionIdOf(message.params);
        this.#agentPending.add(message.id, message.method, sessionId);
        const turn = sessionId !== null ? this.#turns.forSession(sessionId) : undefined;
        if (turn) {
          turn.lastActivityAt = now;
          turn.requests++;
        }
        return PASS;
      }
      default:
        return this.#agentResponse(message, line, now);
    }
  }

  #agentResponse(
    message: Extract<Message, { kind: "result" | "error" }>,
    line: Uint8Array,
    now: number,
  ): Verdict {
    const request = this.#clientPending.take(message.id);
    if (!request) return PASS;
    if (request.answered) {
      this.#log(`dropped the agent's late response to request ${idKey(message.id)}`);
      return DROP;
    }
    const turn = this.#turns.forRequest(message.id);
    if (!turn) return PASS;
    this.#turns.end(turn);
    const expiry = this.#expiring.get(turn);
    let end: TurnEnd;
    if (expiry) {
      clearTimeout(expiry.timer);
      this.#expiring.delete(turn);
      end = { kind: "timeout", silentMs: expiry.silentMs };
    } else if (message.kind === "result") {
      end = { kind: "result", result: message.result, response: message.raw };
    } else {
      end = { kind: "error", error: message.error, response: message.raw };
    }
    return this.#finishTurn(turn, end, line, now);
  }

  // ---------------------------------------------------------------- turn ends

  /**
   * Ends the turn (lib/proxy/turn_end.ts) once its evidence is in, and gives the bytes to
   * answer the client with: none when a retry holds the response.
   */
  #finishTurn(turn: Turn, end: TurnEnd, line: Uint8Array | null, now: number): Verdict {
    // ---- session records (docs/EVIDENCE.md): a turn the agent answered is decided once
    // its records had the settle window to land; the response waits that long.
    const taken = turn.records;
    if (taken && end.kind === "result") {
      const settleMs = this.#opts.profile.recordsSettleMs ?? DEFAULT_SETTLE_MS;
      const records = new Promise((resolve) => setTimeout(resolve, settleMs)).then(() => {
        try {
          return readSessionRecords(taken, turn.startedAt, this.#opts.fs);
        } catch (err) {
          return { records: [], diagnostics: [`session records: ${errorText(err)}`] };
        }
      });
      const later = records.then((read) =>
        this.#endTurn({ conclude: this.#concludeInput(turn, end, now, read), line }, line).later
      );
      return { later };
    }
    return this.#endTurn({ conclude: this.#concludeInput(turn, end, now), line }, line);
  }

  /**
   * Runs the turn's end; the client gets what it says to send. Should it throw (a bug),
   * the client still gets `fallback` (the agent's own response, or turnguard's error).
   */
  #endTurn(
    input: TurnEndInput,
    fallback: Uint8Array | null,
  ): { later: Promise<Uint8Array | null> } {
    const later = endTurn(input, this.#steps, this, (l) => this.#log(l)).then(
      (ended) => ended.send,
      (err) => {
        this.#guardFailure("the turn's end", err);
        return fallback;
      },
    );
    return { later };
  }

  /** The session's record files before its turn; null when the profile names none. */
  #snapshotRecords(sessionId: string, now: number): RecordsSnapshot | null {
    const { profile, env, fs } = this.#opts;
    if (!profile.sessionRecords?.length) return null;
    return snapshotSessionRecords(profile, env, sessionId, now, fs);
  }
  // ---- end of session records

  /** What concludeTurn reads of this proxy's turn. */
  #concludeInput(
    turn: Turn,
    end: TurnEnd,
    now: number,
    records: RecordsRead | null = null,
  ): ConcludeInput {
    const opts = this.#opts;
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
          spawnedAt: turn.startedAt,
          pid: this.#child.pid ?? null,
          profile: opts.profile,
          classifier: opts.classifier,
          now,
          fs: opts.fs,
        }),
    };
  }

  // ---------------------------------------------------------------- retries

  /**
   * RetryHold: keeps the failed attempt's response while its retry waits; the prompt goes
   * again later. Null: held; else why the retry cannot wait.
   */
  hold(
    turn: Turn,
    decision: ScheduledRetry,
    response: Uint8Array | null,
    sent: boolean,
  ): string | null {
    const what = `retry ${decision.attempt} of ${decision.of}`;
    if (this.#agentGone) return "the agent exited";
    if (this.#clientGone) return "the client closed its input";
    if (sent) return "the agent's response already went to the client";
    const waiting: WaitingRetry = {
      turn,
      decision,
      response: response ? response.slice() : null,
    };
    const key = retryKey(turn);
    this.#retrying.set(key, waiting);
    this.#log(
      `session ${turn.sessionId} turn ${turn.turn}: ${what} waits out ${decision.reason}; ` +
        `it runs in ${formatDuration(decision.afterMs)}`,
    );
    this.#waits.schedule(key, decision.afterMs, (how) => {
      if (this.#retrying.get(key) !== waiting) return;
      if (how === "stopped") this.#stopRetry(waiting, "stopped");
      else this.#runRetry(waiting);
    });
    return null;
  }

  /** The retry's time came (or `turnguard retry` asked): the prompt goes to the agent again. */
  #runRetry(waiting: WaitingRetry): void {
    const { turn: failed, decision } = waiting;
    this.#retrying.delete(retryKey(failed));
    if (this.#agentGone || this.#clientGone) {
      this.#answerStopped(
        waiting,
        this.#agentGone ? "the agent exited" : "the client closed its input",
      );
      return;
    }
    const now = this.#now();
    try {
      this.#steps.recorder?.retryStarted(
        { session: failed.sessionId, turn: failed.turn },
        decision.attempt,
      );
    } catch (err) {
      this.#log(`recording the retry's start failed: ${errorText(err)}`);
    }
    const turn = this.#turns.retry(
      failed,
      decision.attempt,
      now,
      snapshotProfileLogs(this.#opts.profile, this.#opts.env, now, this.#opts.fs),
      this.#snapshotRecords(failed.sessionId, now),
    );
    this.#clientPending.add(turn.requestId, "session/prompt", turn.sessionId);
    const prompt = turn.promptLine;
    this.#toAgent.inject(
      prompt.at(-1) === 0x0a ? prompt : joinBytes([prompt, NEWLINE], prompt.length + 1),
    );
    this.#log(
      `session ${turn.sessionId} turn ${turn.turn}: retry ${decision.attempt} of ${decision.of} ` +
        `sent the prompt again (request ${idKey(turn.requestId)})`,
    );
  }

  /** A waiting retry will not run: says why, and answers the client with the failed attempt. */
  #stopRetry(waiting: WaitingRetry, why: string): void {
    const key = retryKey(waiting.turn);
    if (this.#retrying.get(key) !== waiting) return;
    this.#retrying.delete(key);
    this.#waits.stop(key);
    this.#answerStopped(waiting, why);
  }

  #answerStopped(waiting: WaitingRetry, why: string): void {
    const { decision, turn } = waiting;
    const reason = `retry ${decision.attempt} of ${decision.of} was stopped before it ran (${why})`;
    this.#log(`session ${turn.sessionId} turn ${turn.turn}: ${reason}`);
    try {
      this.#steps.recorder?.stopped(
        { session: turn.sessionId, turn: turn.turn },
        turn.attempt,
        reason,
      );
    } catch (err) {
      this.#log(`recording the stopped retry failed: ${errorText(err)}`);
    }
    if (waiting.response) this.#toClient.inject(waiting.response);
  }

  /** Stops the waiting retries of one session (the client cancelled or prompted again). */
  #stopSessionRetries(sessionId: string, why: string): void {
    for (const waiting of [...this.#retrying.values()]) {
      if (waiting.turn.sessionId === sessionId) this.#stopRetry(waiting, why);
    }
  }

  /** Stops every waiting retry (the agent or the client is gone). */
  #stopRetries(why: string): void {
    for (const waiting of [...this.#retrying.values()]) this.#stopRetry(waiting, why);
  }

  /** Sends a response turnguard made up (timeout, dead agent) at the next line boundary. */
  #inject(verdict: Verdict): void {
    if (verdict === null) return;
    if ("later" in verdict) {
      const done = verdict.later.then((bytes) => {
        if (bytes) this.#toClient.inject(bytes);
      });
      this.#inFlight.add(done);
      done.finally(() => this.#inFlight.delete(done));
    } else if (verdict.replace) {
      this.#toClient.inject(verdict.replace);
    }
  }

  /**
   * A request past `maxPending` of its side: not forwarded (remembering it would grow
   * turnguard without bound), answered by turnguard at once with a retryable error.
   */
  #refuse(from: "client" | "agent", id: JsonRpcId, line: Uint8Array): Verdict {
    const max = this.#opts.maxPending ?? DEFAULT_MAX_PENDING;
    const message = `turnguard: too many requests in flight (${max}); this one was not forwarded`;
    this.#log(`refused ${from} request ${idKey(id)}: ${max} requests in flight`);
    const answer = encodeResponse(
      errorResponse(id, message, overloadData(message)),
      idLexemeOf(line, id),
      lineEnding(line),
    );
    (from === "client" ? this.#toClient : this.#toAgent).inject(answer);
    return DROP;
  }

  /** The agent is gone: every request the client still waits on gets an error. */
  #answerOrphans(code: number | null, signal: string | null): void {
    const tail = lastLines(this.#stderrTail.text(), 3);
    const message = exitMessage(code, signal, tail);
    const now = this.#now();
    for (const request of this.#clientPending.all()) {
      this.#clientPending.take(request.id);
      if (request.answered) continue;
      const turn = this.#turns.forRequest(request.id);
      const crash = () =>
        encodeResponse(
          errorResponse(request.id, message, crashData(message, code)),
          request.idLexeme,
          "\n",
        );
      if (turn) {
        this.#turns.end(turn);
        if (this.#signalled) turn.cancelled = true;
        // Whether a client that hung up gave up on the turn is decide's (`givenUp`).
        const end: TurnEnd = {
          kind: "exit",
          code,
          signal,
          stderrTail: tail,
          clientGone: this.#clientGone,
        };
        this.#inject(
          this.#guard("the turn's end", () => this.#finishTurn(turn, end, null, now), {
            replace: crash(),
          }),
        );
        continue;
      }
      this.#toClient.inject(crash());
    }
  }

  // ---------------------------------------------------------------- silence

  #startTicker(timeoutMs: number): void {
    const tick = Math.min(1000, Math.max(20, Math.floor(timeoutMs / 10)));
    this.#ticker = setInterval(() => this.#checkSilence(timeoutMs), tick);
  }

  #checkSilence(timeoutMs: number): void {
    const now = this.#now();
    for (const turn of this.#turns.all()) {
      if (this.#expiring.has(turn)) continue;
      // Waiting on the client (a permission prompt) is not the agent's silence.
      if (this.#agentPending.countFor(turn.sessionId) > 0) {
        turn.lastActivityAt = now;
        continue;
      }
      const silentMs = now - turn.lastActivityAt;
      if (silentMs < timeoutMs) continue;
      this.#log(
        `session ${turn.sessionId} turn ${turn.turn}: silent for ${silentMs} ms; sending session/cancel`,
      );
      const cancel = {
        jsonrpc: "2.0",
        method: "session/cancel",
        params: { sessionId: turn.sessionId },
      };
      this.#toAgent.inject(encodeLine(cancel, "\n"));
      const timer = setTimeout(() => this.#expire(turn, silentMs), this.#grace());
      this.#expiring.set(turn, { timer, silentMs });
    }
  }

  /** The grace after a timeout's cancel is over: answer the client now. */
  #expire(turn: Turn, silentMs: number): void {
    this.#expiring.delete(turn);
    if (this.#turns.forRequest(turn.requestId) !== turn) return;
    this.#turns.end(turn);
    const request = this.#clientPending.get(turn.requestId);
    if (request) request.answered = true;
    const end: TurnEnd = { kind: "timeout", silentMs };
    const message = `the agent was silent for ${formatDuration(silentMs)}`;
    this.#inject(
      this.#guard("the turn's end", () => this.#finishTurn(turn, end, null, this.#now()), {
        replace: encodeResponse(
          errorResponse(turn.requestId, message, crashData(message, null)),
          turn.requestIdLexeme,
          "\n",
        ),
      }),
    );
  }

  // ---------------------------------------------------------------- shutdown

  #grace(): number {
    return timerDelay(this.#opts.graceMs ?? DEFAULT_GRACE_MS);
  }

  /** The client closed stdin: close the agent's, then TERM and KILL it if it lingers. */
  async #clientClosed(): Promise<void> {
    // An `error` may be followed by `end`: the input closes once.
    if (this.#agentGone || this.#clientGone) return;
    this.#fromClient.end((segment) =>
      this.#route(segment, this.#toAgent, (l) => this.#fromClientLine(l))
    );
    this.#clientGone = true;
    this.#stopRetries("the client closed its input");
    // The grace counts from the client's close, not from when the agent took the last of
    // its input: an agent that never reads its stdin (while it floods stdout) is stopped.
    const child = this.#child;
    const alive = () => child.exitCode === null && child.signalCode === null;
    this.#eofTimers.push(setTimeout(() => {
      if (!alive()) return;
      this.#log("the agent ignored EOF; sending SIGTERM");
      killGroup(child, "SIGTERM");
      this.#eofTimers.push(setTimeout(() => {
        if (!alive()) return;
        this.#log("the agent ignored SIGTERM; sending SIGKILL");
        killGroup(child, "SIGKILL");
      }, this.#grace()));
    }, this.#grace()));
    await this.#toAgent.end();
    this.#log("the client closed its input; closed the agent's");
  }

  /**
   * The last resort: whatever reading a line throws (a bug, a runtime limit the bounds
   * missed), the line still passes as it is and the proxy goes on; the failure is said on
   * stderr once.
   */
  #guard<T>(what: string, read: () => T, fallback: T): T {
    try {
      return read();
    } catch (err) {
      this.#guardFailure(what, err);
      return fallback;
    }
  }

  /** Says once on stderr that reading a line failed (see `#guard`). */
  #guardFailure(what: string, err: unknown): void {
    if (this.#guardFailed) return;
    this.#guardFailed = true;
    this.#opts.stderr.write(
      `turnguard: reading ${what} failed (${errorText(err)}); it passed through unread\n`,
    );
  }

  #log(line: string): void {
    if (this.#opts.verbose) this.#opts.stderr.write(`turnguard: ${line}\n`);
  }
}
