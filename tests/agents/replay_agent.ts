/**
 * The replay agent: plays one corpus transcript back as the agent side of ACP, with no network
 * and no agent install. It walks the recorded events in order: for each line the client sent
 * (`c2a`) it waits for one line on stdin; each line the agent sent (`a2c`) it writes to stdout
 * exactly as recorded; recorded stderr goes to stderr; and with REPLAY_HOME set, each file the
 * agent wrote (`file`) is written under that directory at its place in the sequence.
 *
 * A transcript recorded write by write (header `files: "writes"`) is replayed so: each write
 * is appended (or the file rewritten) at its place between the ACP lines; a write the agent
 * made after it answered a prompt, also as long after the last ACP line as it came in the
 * recording (at most WRITE_DELAY_CAP_MS, past every built-in settle window), so it lands as
 * late as it did: inside or after the profile's settle window. (Writes during a turn keep
 * their order before the answer and go at once: their timing decides nothing.) The moment the
 * client closed stdin is recorded too: what the agent wrote after it is written after stdin
 * closes here, at once (no turn is left to read it). An older transcript holds each
 * file once in its final state: it is written at its place, with no delay (appending what grew,
 * so readers that snapshot sizes see the turn's bytes arrive).
 *
 * Usage: replay_agent.ts TRANSCRIPT.jsonl. After the last event it exits 0 when stdin closes.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { readTranscript, RecordedFileSchema, STDIN_CLOSED } from "./transcript.ts";
import * as v from "valibot";

/**
 * The longest a recorded write is held after the ACP line before it: well past the longest
 * built-in settle window (200 ms, anchors.toml), so a write that missed it still misses it.
 */
const WRITE_DELAY_CAP_MS = 600;

const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: replay_agent.ts TRANSCRIPT.jsonl\n");
  process.exit(2);
}
const { header, events } = readTranscript(path);
const home = process.env.REPLAY_HOME;
const paced = header.files === "writes";

/** Lines received from the client and not yet matched to a recorded `c2a` event. */
let received = 0;
let wanted = 0;
let wake: (() => void) | null = null;
let closed = false;
let buf = "";
process.stdin.on("data", (c: Buffer) => {
  buf += c.toString("utf8");
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    buf = buf.slice(nl + 1);
    received++;
  }
  wake?.();
});
process.stdin.on("end", () => {
  closed = true;
  wake?.();
});

function nextClientLine(): Promise<boolean> {
  wanted++;
  return new Promise((r) => {
    const check = () => {
      if (received >= wanted) return r(true);
      if (closed) return r(false);
      wake = check;
    };
    check();
  });
}

function stdinClosed(): Promise<void> {
  return new Promise((r) => {
    const check = () => (closed ? r() : (wake = check));
    check();
  });
}

function writeOut(line: string): Promise<void> {
  return new Promise((r) => {
    if (process.stdout.write(`${line}\n`)) r();
    else process.stdout.once("drain", () => r());
  });
}

function writeFile(line: string): void {
  if (!home) return;
  const f = v.parse(RecordedFileSchema, JSON.parse(line));
  const target = join(home, f.path.replace(/^\$HOME\/?/, ""));
  mkdirSync(dirname(target), { recursive: true });
  if (f.append) return appendFileSync(target, f.content);
  const old = existsSync(target) ? readFileSync(target, "utf8") : null;
  if (!paced && old !== null && f.content.startsWith(old)) {
    appendFileSync(target, f.content.slice(old.length));
  } else writeFileSync(target, f.content);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The recorded time of the last ACP event (or stdin's close), and when it was replayed. */
let wire = { t: 0, at: Date.now() };
const mark = (t: number) => (wire = { t, at: Date.now() });
/** The ids of the client's session/prompt requests. */
const prompts = new Set<unknown>();
/** The agent answered a prompt and no new one came: its writes keep their recorded delays. */
let answered = false;

/** The line as a JSON-RPC message's method and id, when it is one. */
function message(line: string): { method?: unknown; id?: unknown } {
  try {
    const m = JSON.parse(line);
    return typeof m === "object" && m !== null ? m : {};
  } catch {
    return {};
  }
}

for (const e of events) {
  if (e.dir === "c2a") {
    if (!(await nextClientLine())) break;
    mark(e.t);
    const m = message(e.line);
    if (m.method === "session/prompt") prompts.add(m.id), answered = false;
  } else if (e.dir === "a2c") {
    await writeOut(e.line);
    mark(e.t);
    const m = message(e.line);
    if (m.method === undefined && prompts.has(m.id)) answered = true;
  } else if (e.dir === "stderr") {
    process.stderr.write(`${e.line}\n`);
  } else if (e.dir === "meta" && e.line === STDIN_CLOSED && paced) {
    await stdinClosed();
    mark(e.t);
    answered = false; // no turn is left to read what comes now: no delay
  } else if (e.dir === "file") {
    if (paced && answered) {
      const due = Math.min(e.t - wire.t, WRITE_DELAY_CAP_MS) - (Date.now() - wire.at);
      if (due > 0) await sleep(due);
    }
    writeFile(e.line);
  }
}
await stdinClosed();
process.exit(0);
