// The code that runs inside a plugin worker thread (see lib/plugin/host.ts). It is plain
// JavaScript, embedded as text and started with node:worker_threads' `eval`, so it works the
// same under Bun, Deno and the compiled binary, and it imports nothing of turnguard.
//
// Protocol, main thread -> worker (postMessage):
//   {op: "load", url, sab}   import the plugin module; answer {op: "loaded", shape} or
//                            {op: "failed", message} by postMessage, and set READY to 1 or
//                            2 (after writing {threw: message} in the shared buffer, for a
//                            main thread that waits on READY instead of on messages)
//   {op: "call", path, arg}  call the function at `path` in the default export with `arg`
//                            and the plugin's context (see below); answer in the shared
//                            buffer: the JSON of {ok: value} or {threw: message}, its length
//                            in LENGTH, then REPLY = 1 + notify.
// During a call, the plugin's `context.classify(text)` asks the main thread, which is
// waiting on REPLY: the worker writes {op: "classify", arg: text} in the shared buffer, sets
// ASK = 0 and REPLY = 2 + notify, and waits on ASK; the main thread answers with the JSON of
// {ok: value} or {threw: message} in the buffer, REPLY back to 0, then ASK = 1 + notify. So
// a user plugin classifies with the very function the built-in packs use, synchronously.
// The main thread blocks on REPLY with a time budget and terminates the worker when the
// budget runs out, so a plugin that loops never holds a turn's outcome; it then starts a
// replacement at once and, before its next call, blocks on READY (not charged to a budget).
//
// Worker -> main thread: {op: "output", text}  what the plugin wrote with console.* or
// process.stdout/stderr.write. A worker's own console writes to turnguard's stdout, which in
// proxy mode is the client's ACP wire: so they are taken here, at most OUTPUT_BYTES per
// worker, and the main thread shows them on stderr through its sink (redacted, escaped).
"use strict";
const { parentPort } = require("node:worker_threads");

const OUTPUT_BYTES = 64 * 1024;
let outputLeft = OUTPUT_BYTES;

function forward(text) {
  if (outputLeft <= 0) return;
  if (text.length >= outputLeft) {
    text = text.slice(0, outputLeft) + "\n[further output of this plugin dropped]";
    outputLeft = 0;
  } else outputLeft -= text.length;
  parentPort.postMessage({ op: "output", text });
}

function show(args) {
  return args.map((a) => {
    if (typeof a === "string") return a;
    try {
      return JSON.stringify(a) ?? String(a);
    } catch {
      return String(a);
    }
  }).join(" ");
}

for (const name of ["log", "info", "debug", "warn", "error", "trace", "dir", "table"]) {
  console[name] = (...args) => forward(show(args));
}
// What the plugin wrote to a stream since its last newline: stream writes are shown as whole
// lines, so a secret written in pieces (`write("sk-ant-")`, `write("<the key>\n")`) reaches
// the main thread's redaction whole. A partial line goes out when it reaches OUTPUT_BYTES
// (past which all is dropped anyway) and at the end of the import and of each call.
let partial = "";

function forwardWritten(text) {
  partial += text;
  const nl = partial.lastIndexOf("\n");
  if (nl === -1 && partial.length < OUTPUT_BYTES) return;
  const whole = nl === -1 ? partial : partial.slice(0, nl + 1);
  partial = nl === -1 ? "" : partial.slice(nl + 1);
  forward(whole);
}

function flushWritten() {
  if (partial === "") return;
  const rest = partial;
  partial = "";
  forward(rest);
}

for (const stream of [process.stdout, process.stderr]) {
  stream.write = (chunk, ...rest) => {
    forwardWritten(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk));
    const done = rest.find((r) => typeof r === "function");
    if (done) done();
    return true;
  };
}

const REPLY = 0;
const LENGTH = 1;
const READY = 2;
const ASK = 3;
const HEADER_BYTES = 16;
const ASKING = 2;
// The head of a text a plugin has classified: whatever its characters, the question's JSON
// (6 bytes at most a character) fits the shared buffer. A cause is in a message's head.
const QUESTION_CHARS = 8 * 1024;
const FUNCTION_MARK = "$turnguard:function";
const MAX_DEPTH = 12;

let exported;
let ctrl;
let data;
let ready = Promise.resolve();
const encoder = new TextEncoder();

function errorText(err) {
  if (err instanceof Error) return err.message || err.name;
  try {
    return String(err);
  } catch {
    return "a value that cannot be shown";
  }
}

// A structured-clone-safe picture of the export: functions become a mark, so the main thread
// can validate the module's shape without running any of its code.
function describe(value, depth, seen) {
  if (typeof value === "function") return { [FUNCTION_MARK]: true };
  if (value === null || typeof value !== "object") {
    return typeof value === "symbol" || typeof value === "bigint" ? String(value) : value;
  }
  if (depth > MAX_DEPTH || seen.has(value)) return "[too deep or circular]";
  seen.add(value);
  if (value instanceof RegExp) return `[RegExp ${value.source}]`;
  if (Array.isArray(value)) return value.map((item) => describe(item, depth + 1, seen));
  const out = {};
  for (const key of Object.keys(value)) out[key] = describe(value[key], depth + 1, seen);
  return out;
}

// Writes a result's JSON into the shared buffer and its length into LENGTH.
function write(result) {
  let json;
  try {
    json = JSON.stringify(result === undefined ? { ok: null } : result);
  } catch (err) {
    json = JSON.stringify({ threw: `returned a value that is not JSON: ${errorText(err)}` });
  }
  let bytes = encoder.encode(json);
  if (bytes.length > data.length) {
    bytes = encoder.encode(JSON.stringify({
      threw: `returned ${bytes.length} bytes, more than the ${data.length} a result may have`,
    }));
  }
  data.set(bytes);
  Atomics.store(ctrl, LENGTH, bytes.length);
}

function reply(result) {
  write(result);
  Atomics.store(ctrl, REPLY, 1);
  Atomics.notify(ctrl, REPLY);
}

let calling = false;

// Asks the main thread (waiting for this call's answer) to run `op` of the context on `arg`.
function ask(op, arg) {
  if (!calling) throw new Error(`context.${op} can only be used while turnguard calls the plugin`);
  write({ op, arg });
  Atomics.store(ctrl, ASK, 0);
  Atomics.store(ctrl, REPLY, ASKING);
  Atomics.notify(ctrl, REPLY);
  Atomics.wait(ctrl, ASK, 0);
  const length = Atomics.load(ctrl, LENGTH);
  const answer = JSON.parse(new TextDecoder().decode(data.slice(0, length)));
  if (answer.threw !== undefined) throw new Error(answer.threw);
  return answer.ok;
}

// The second argument of every plugin function turnguard calls (lib/plugin/api.ts).
const context = Object.freeze({
  classify: (text) => ask("classify", String(text).slice(0, QUESTION_CHARS)),
});

function call(path, arg) {
  let owner = exported;
  for (const key of path.slice(0, -1)) owner = owner == null ? undefined : owner[key];
  const fn = owner == null ? undefined : owner[path[path.length - 1]];
  if (typeof fn !== "function") return { threw: `${path.join(".")} is not a function` };
  try {
    calling = true;
    const value = fn.call(owner, arg, context);
    if (value !== null && typeof value === "object" && typeof value.then === "function") {
      return { threw: "returned a Promise; plugin functions must answer synchronously" };
    }
    return { ok: value === undefined ? null : value };
  } catch (err) {
    return { threw: errorText(err) };
  } finally {
    calling = false;
    flushWritten();
  }
}

parentPort.on("message", async (message) => {
  if (message.op === "load") {
    ctrl = new Int32Array(message.sab, 0, HEADER_BYTES / 4);
    data = new Uint8Array(message.sab, HEADER_BYTES);
    let loaded;
    ready = new Promise((resolve) => (loaded = resolve));
    try {
      const mod = await import(message.url);
      flushWritten();
      exported = mod.default;
      parentPort.postMessage({
        op: "loaded",
        shape: exported === undefined ? undefined : describe(exported, 0, new Set()),
      });
      Atomics.store(ctrl, READY, 1);
    } catch (err) {
      flushWritten();
      parentPort.postMessage({ op: "failed", message: errorText(err) });
      write({ threw: errorText(err) });
      Atomics.store(ctrl, READY, 2);
    }
    Atomics.notify(ctrl, READY);
    loaded();
    return;
  }
  if (message.op === "call") {
    await ready;
    reply(
      exported === undefined
        ? { threw: "the plugin did not load" }
        : call(message.path, message.arg),
    );
  }
});
