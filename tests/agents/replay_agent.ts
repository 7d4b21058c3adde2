/**
 * The replay agent: plays one corpus transcript back as the agent side of ACP, with no network
 * and no agent install. It walks the recorded events in order: for each line the client sent
 * (`c2a`) it waits for one line on stdin; each line the agent sent (`a2c`) it writes to stdout
 * exactly as recorded; recorded stderr goes to stderr; and with REPLAY_HOME set, each file the
 * agent wrote (`file`) is written under that directory at its place in the sequence (appending
 * what grew, so readers that snapshot sizes see the turn's bytes arrive).
 *
 * Usage: replay_agent.ts TRANSCRIPT.jsonl. After the last event it exits 0 when stdin closes.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { readTranscript, RecordedFileSchema } from "./transcript.ts";
import * as v from "valibot";

const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: replay_agent.ts TRANSCRIPT.jsonl\n");
  process.exit(2);
}
const { events } = readTranscript(path);
const home = process.env.REPLAY_HOME;

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
  const old = existsSync(target) ? readFileSync(target, "utf8") : null;
  if (old !== null && f.content.startsWith(old)) {
    appendFileSync(target, f.content.slice(old.length));
  } else writeFileSync(target, f.content);
}

for (const e of events) {
  if (e.dir === "c2a") {
    if (!(await nextClientLine())) break;
  } else if (e.dir === "a2c") {
    await writeOut(e.line);
  } else if (e.dir === "stderr") {
    process.stderr.write(`${e.line}\n`);
  } else if (e.dir === "file") {
    writeFile(e.line);
  }
}
await new Promise<void>((r) => {
  if (closed) return r();
  process.stdin.on("end", () => r());
});
process.exit(0);
