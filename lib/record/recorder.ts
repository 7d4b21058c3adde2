/**
 * `turnguard proxy --record FILE`: writes the proxied session as a recording in the format
 * of lib/record/transcript.ts, which `turnguard replay` plays back through the whole
 * pipeline. The wire is recorded as it came, each direction's lines at the moment the proxy
 * read them (`c2a` what the client sent, `a2c` what the agent sent, before any rewrite), the
 * agent's stderr line by line, and the moment the client closed the agent's stdin.
 *
 * Files are recorded write by write (`files: "writes"`), and only the ones turnguard's
 * evidence readers read: the profile's `logs` and, for each session with a turn running,
 * its `session_records` (templates expanded with the session's cwd and id). Each look
 * records the bytes a file gained since the last look (`append`), counted from the size the
 * file had when the first turn that reads it started, or the whole file when it was
 * replaced or shrank. A look is taken before each line the agent sends while a turn runs,
 * once more when the turn's Outcome is made (so a late write lands after the response, at
 * the time it was seen), before each prompt (a write that came after the last Outcome), and
 * at the end. A file outside HOME is not recorded (a `meta` line says so, once).
 *
 * A look lists the files and takes their sizes at its moment, on the relay's thread
 * (directory listings and `lstat`, no file opened: what the proxy's own snapshots do), then,
 * when a file grew, reads the bytes up to those sizes through the bounded reader
 * (lib/io/bounded_read.ts) on the runtime's thread pool, never on the relay's thread, each
 * look within its own budget (DEFAULT_READ_LIMITS: 64 files, 4 MiB, 2 s; what does not fit
 * is said in a `meta` line). The wire is never held for a look: the recording keeps its
 * order (a look's writes before the agent line it was taken for) by writing its events in
 * sequence, each when its read settled; the lines that come while a read runs wait in
 * memory.
 *
 * The recording holds the full wire, prompts and replies included: it is created 0600
 * (lib/io/private_file.ts), and a user shares it knowing that.
 */
import { ftruncateSync, writeSync } from "node:fs";
import { relative } from "node:path";
import { SessionCwds } from "../acp/session_cwds.ts";
import { isObject, type JsonRpcId } from "../acp/jsonrpc.ts";
import { recordPatterns } from "../cause/session_records.ts";
import { listLogs, takeSnapshot } from "../cause/snapshot.ts";
import { type BoundedRead, DEFAULT_READ_LIMITS, ReadBudget } from "../io/bounded_read.ts";
import { homeDir } from "../io/env_dirs.ts";
import { expandPatterns } from "../io/glob.ts";
import { type LogFs, nodeLogFs } from "../io/logfs.ts";
import { closeQuietly, openPrivateAppend } from "../io/private_file.ts";
import { STDIN_CLOSED, type TranscriptEvent, type TranscriptHeader } from "./transcript.ts";

/** What the recorder is told of the wire: each side's bytes as the proxy read them. */
export interface WireTap {
  /** A chunk the client sent the agent. */
  fromClient(chunk: Uint8Array): void;
  /** The client closed its side (the agent's stdin is closed next). */
  clientClosed(): void;
  /** A chunk of the agent's stdout. */
  fromAgent(chunk: Uint8Array): void;
  /** A chunk of the agent's stderr. */
  agentStderr(chunk: Uint8Array): void;
}

/** The evidence files of a profile the recorder looks at. */
export interface RecordedSources {
  logs: readonly string[];
  sessionRecords?: readonly string[];
}

/** How to record. */
export interface RecorderOptions {
  /** The recording's path (created 0600, emptied when it exists). */
  path: string;
  /** The header's `agent` (the command's basename), `pkg` (the command), `profile`. */
  agent: string;
  command: string;
  profile: string;
  sources: RecordedSources;
  env: Record<string, string | undefined>;
  /** The agent's working directory (`{cwd}` of a session that named none). */
  cwd: string;
  /** Where the recorder's own problems are said (once each). */
  warn: (line: string) => void;
  now?: () => number;
  fs?: LogFs;
}

/** A recorded line's text is cut past this many characters (a `meta` line says so). */
export const MAX_RECORDED_LINE = 64 * 1024 * 1024;

/** One direction's bytes cut into lines. */
class Lines {
  #decoder = new TextDecoder();
  #text = "";
  #cut = false;
  constructor(readonly onLine: (line: string, cut: boolean) => void) {}

  push(chunk: Uint8Array): void {
    const text = this.#decoder.decode(chunk, { stream: true });
    let from = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", from)) {
      this.#add(text.slice(from, nl));
      this.onLine(this.#text, this.#cut);
      this.#text = "";
      this.#cut = false;
      from = nl + 1;
    }
    this.#add(text.slice(from));
  }

  /** The last line, when it had no newline. */
  end(): void {
    this.#add(this.#decoder.decode());
    if (this.#text !== "") this.onLine(this.#text, this.#cut);
    this.#text = "";
  }

  #add(text: string): void {
    const room = MAX_RECORDED_LINE - this.#text.length;
    if (text.length > room) this.#cut = true;
    this.#text += text.length > room ? text.slice(0, room) : text;
  }
}

/** A file's place: how far it was recorded, and which file it was. */
interface Place {
  dev: number;
  ino: number;
  offset: number;
}

/** A session whose turn runs (or waits for its Outcome): what its files are. */
interface Active {
  patterns: string[];
  /** Bumped by each prompt: an Outcome ends only the turn it was made for. */
  gen: number;
}

/** Records one proxied session into its recording file. */
export class Recorder implements WireTap {
  readonly #opts: RecorderOptions;
  readonly #fd: number;
  readonly #now: () => number;
  readonly #t0: number;
  readonly #fs: LogFs;
  readonly #home: string | null;
  readonly #cwds = new SessionCwds();
  readonly #active = new Map<string, Active>();
  readonly #places = new Map<string, Place>();
  readonly #outside = new Set<string>();
  readonly #client: Lines;
  readonly #agent: Lines;
  readonly #stderr: Lines;
  /** The events in recording order; each resolves to its lines once known. */
  #tail: Promise<void> = Promise.resolve();
  /** The last look; each reads after the one before it. */
  #lastLook: Promise<unknown> = Promise.resolve();
  /** Each file's size at the last look that saw it. */
  readonly #seen = new Map<string, number>();
  /** Events waiting behind a look. */
  #pending = 0;
  #failed = false;
  #closed = false;
  #gen = 0;

  constructor(opts: RecorderOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#fs = opts.fs ?? nodeLogFs;
    this.#home = homeDir(opts.env);
    this.#fd = openPrivateAppend(opts.path);
    ftruncateSync(this.#fd, 0);
    this.#t0 = this.#now();
    const header: TranscriptHeader = {
      kind: "turnguard-corpus",
      v: 1,
      agent: opts.agent,
      pkg: opts.command,
      version: "unknown",
      scenario: "turnguard proxy --record",
      about: `a session of ${opts.agent} recorded by turnguard proxy --record`,
      recordedAt: new Date(this.#t0).toISOString(),
      exit: null,
      home: "$HOME",
      files: "writes",
      profile: opts.profile,
      cwd: opts.cwd,
    };
    this.#write([JSON.stringify(header)]);
    this.#client = new Lines((line, cut) => this.#clientLine(line, cut));
    this.#agent = new Lines((line, cut) => this.#agentLine(line, cut));
    this.#stderr = new Lines((line, cut) => this.#event("stderr", line, cut));
  }

  fromClient(chunk: Uint8Array): void {
    this.#client.push(chunk);
  }

  clientClosed(): void {
    this.#client.end();
    this.#event("meta", STDIN_CLOSED);
  }

  fromAgent(chunk: Uint8Array): void {
    this.#agent.push(chunk);
  }

  agentStderr(chunk: Uint8Array): void {
    this.#stderr.push(chunk);
  }

  /** A turn's Outcome was made: its files are looked at once more, then no longer. */
  outcome(sessionId: string | null): void {
    const active = sessionId !== null ? this.#active.get(sessionId) : undefined;
    const look = this.#look(false);
    if (!active || sessionId === null) return;
    const gen = active.gen;
    void look.then(() => {
      if (this.#active.get(sessionId)?.gen === gen) this.#active.delete(sessionId);
    });
  }

  /**
   * The proxy ended: the last partial lines, a last look at every file recorded (a last
   * line without newline too) and the agent's exit are written, then the file is closed.
   */
  async close(exit: { code: number | null; signal?: string | null } | null): Promise<void> {
    if (this.#closed) return;
    this.#agent.end();
    this.#stderr.end();
    this.#look(true);
    if (exit) {
      this.#event(
        "meta",
        `the agent exited (${exit.signal ? exit.signal : `status ${exit.code}`})`,
      );
    }
    await this.#tail;
    this.#closed = true;
    closeQuietly(this.#fd);
  }

  #clientLine(line: string, cut: boolean): void {
    const m = line.includes('"session/') ? parse(line) : null;
    const method = m?.method;
    if (m && method === "session/prompt" && isObject(m.params)) {
      const sessionId = m.params.sessionId;
      if (typeof sessionId === "string") {
        this.#start(sessionId);
        // What the files gained since the last look (a write after the last Outcome) goes
        // before the prompt, where the proxy's snapshot for the new turn saw it.
        this.#look(false);
      }
    }
    this.#event("c2a", line, cut);
    const id = m ? idOf(m) : undefined;
    if (method === "session/new" && id !== undefined) this.#cwds.requested(id, m!.params);
    else if (method === "session/load" || method === "session/resume") this.#cwds.loaded(m!.params);
  }

  #agentLine(line: string, cut: boolean): void {
    if (this.#active.size > 0) this.#look(false);
    this.#event("a2c", line, cut);
    if (!line.includes('"id"')) return;
    const m = parse(line);
    const id = m ? idOf(m) : undefined;
    if (m && id !== undefined && !("method" in m) && "result" in m) {
      this.#cwds.answered(id, m.result);
    }
  }

  /**
   * A prompt starts a turn of `sessionId`: a file not recorded yet is recorded from its
   * size now (a file recorded before goes on from where its last look left it).
   */
  #start(sessionId: string): void {
    const { sources, env } = this.#opts;
    const cwd = this.#cwds.get(sessionId) ?? this.#opts.cwd;
    const patterns = [...expandPatterns(sources.logs, { env, cwd }).patterns];
    if (sources.sessionRecords?.length) {
      patterns.push(...recordPatterns(sources.sessionRecords, sessionId, env, cwd).patterns);
    }
    this.#active.set(sessionId, { patterns, gen: ++this.#gen });
    const snapshot = takeSnapshot(patterns, this.#now(), this.#fs);
    for (const [path, st] of snapshot.files) {
      if (!this.#places.has(path)) {
        this.#places.set(path, { dev: st.dev, ino: st.ino, offset: st.size });
      }
    }
  }

  /**
   * Looks at the files of the running turns (and, `final`, at every file recorded): their
   * sizes now, taken on this thread (a listing and an `lstat` each, no file opened), and a
   * read of what they gained up to those sizes, after the looks before it. Its writes are
   * recorded at this place in the sequence. Nothing grew since the last look: no read.
   */
  #look(final: boolean): Promise<unknown> {
    const patterns = new Set<string>();
    for (const a of this.#active.values()) for (const p of a.patterns) patterns.add(p);
    const paths = new Set(listLogs([...patterns], this.#fs, [], false));
    if (final) { for (const p of this.#places.keys()) paths.add(p); }
    const sizes = new Map<string, number>();
    let grew = false;
    for (const path of paths) {
      try {
        const size = this.#fs.stat(path).size;
        sizes.set(path, size);
        if (this.#seen.get(path) !== size) grew = true;
        this.#seen.set(path, size);
      } catch { /* gone, or not there yet */ }
    }
    if (!grew && !final) return this.#lastLook;
    const t = this.#now() - this.#t0;
    const look = this.#lastLook.then(() => this.#read(sizes, final, t));
    this.#lastLook = look;
    this.#enqueue(look);
    return look;
  }

  /** Reads what the files gained up to `sizes`; the events to record, at time `t`. */
  async #read(sizes: Map<string, number>, final: boolean, t: number): Promise<string[]> {
    const budget = new ReadBudget(DEFAULT_READ_LIMITS, this.#now);
    const out: string[] = [];
    for (const path of [...sizes.keys()].sort()) {
      const rel = this.#homeRelative(path);
      if (rel === null) {
        if (!this.#outside.has(path)) {
          this.#outside.add(path);
          out.push(event(t, "meta", `not recorded: ${path} is outside HOME`));
        }
        continue;
      }
      const place = this.#places.get(path);
      let append = true;
      const read: BoundedRead = await this.#fs.read(path, (s) => {
        const same = place && place.dev === s.dev && place.ino === s.ino &&
          place.offset <= s.size;
        if (place && !same) append = false;
        return { start: same ? place.offset : 0, end: Math.min(s.size, sizes.get(path)!) };
      }, budget);
      if (!read.ok) {
        if (read.code !== "ENOENT") out.push(event(t, "meta", read.why));
        continue;
      }
      if (read.short) out.push(event(t, "meta", read.short));
      // A line caught half-written waits for its end (the last look takes it as it is).
      const consumed = final ? read.bytes.length : read.bytes.lastIndexOf(0x0a) + 1;
      const kept = new TextDecoder().decode(read.bytes.subarray(0, consumed));
      this.#places.set(path, {
        dev: read.stat.dev,
        ino: read.stat.ino,
        offset: read.start + consumed,
      });
      if (kept === "" && append) continue;
      const file = { path: `$HOME/${rel}`, size: read.stat.size, content: kept, append };
      if (!append) delete (file as { append?: boolean }).append;
      out.push(event(t, "file", JSON.stringify(file)));
    }
    return out;
  }

  /** `path` relative to HOME, or null outside it. */
  #homeRelative(path: string): string | null {
    if (this.#home === null) return null;
    const rel = relative(this.#home, path);
    return rel === "" || rel.startsWith("..") || rel.startsWith("/") ? null : rel;
  }

  /** Records one event now (its time is now). */
  #event(dir: TranscriptEvent["dir"], line: string, cut = false): void {
    const t = this.#now() - this.#t0;
    const lines = [event(t, dir, line)];
    if (cut) lines.push(event(t, "meta", `the line above was cut at ${MAX_RECORDED_LINE} chars`));
    this.#enqueue(lines);
  }

  /** Puts events in the sequence: written once everything before them was. */
  #enqueue(lines: string[] | Promise<string[]>): void {
    if (Array.isArray(lines) && this.#pending === 0) return this.#write(lines);
    this.#pending++;
    this.#tail = this.#tail.then(() => lines).then(
      (l) => this.#write(l),
      (err) => this.#write([event(this.#now() - this.#t0, "meta", `a look failed: ${err}`)]),
    ).finally(() => void this.#pending--);
  }

  #write(lines: string[]): void {
    if (this.#failed || this.#closed || lines.length === 0) return;
    try {
      writeSync(this.#fd, lines.join("\n") + "\n");
    } catch (err) {
      this.#failed = true;
      this.#opts.warn(
        `turnguard: --record ${this.#opts.path}: cannot write (${
          (err as { code?: string }).code ?? err
        }); the recording stops here`,
      );
    }
  }
}

/** One event line. */
function event(t: number, dir: TranscriptEvent["dir"], line: string): string {
  return JSON.stringify({ t, dir, line });
}

/** A message's JSON-RPC id, when it has one. */
function idOf(m: Record<string, unknown>): JsonRpcId | undefined {
  const id = m.id;
  return typeof id === "string" || typeof id === "number" || id === null ? id : undefined;
}

/** A line as a JSON object, when it is one. */
function parse(line: string): Record<string, unknown> | null {
  try {
    const m = JSON.parse(line);
    return isObject(m) ? m : null;
  } catch {
    return null;
  }
}
