#!/usr/bin/env node
// scribe: a small ACP agent over stdio (newline-delimited JSON-RPC, no dependencies) that
// turnguard has no profile for — the agent of "Teach turnguard a new agent" in
// docs/PLUGINS.md. Like real agents, it keeps a session file per session, named after the
// session's working directory, and a log:
//
//   $HOME/.scribe/sessions/<cwd, every non-alphanumeric character as "-">/<session>.jsonl
//   $HOME/.scribe/scribe.log
//
// A prompt that mentions "quota" plays a backend that ran out of quota: the error goes
// only to the session file, and the turn ends `end_turn` with no text (a swallowed
// failure). Any other prompt is answered "Hello from scribe." After each answer the agent
// writes one more record (the turn's usage), a few milliseconds late, as agents do.
// `session/load` opens the session it names in the cwd it gives (nothing is replayed).
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";

const home = join(process.env.HOME ?? ".", ".scribe");
const sessions = new Map();

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const reply = (id, result) => send({ jsonrpc: "2.0", id, result });

function append(path, line) {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, line + "\n");
}
const record = (sessionId, r) => append(sessions.get(sessionId), JSON.stringify(r));
const log = (text) => append(join(home, "scribe.log"), `${new Date().toISOString()} ${text}`);

function prompt(id, { sessionId, prompt }) {
  const text = prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
  record(sessionId, { type: "user", text });
  log(`INFO session ${sessionId}: prompt`);
  if (text.includes("quota")) {
    record(sessionId, {
      type: "error",
      code: "insufficient_quota",
      message: "You exceeded your current quota, please check your plan and billing details.",
    });
    log(`WARN session ${sessionId}: the model gave no answer`);
  } else {
    const answer = "Hello from scribe.";
    send({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: answer } },
      },
    });
    record(sessionId, { type: "assistant", text: answer });
  }
  reply(id, { stopReason: "end_turn" });
  setTimeout(() => record(sessionId, { type: "usage", output_tokens: 5 }), 10);
}

createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.id === undefined || typeof m.method !== "string") return; // notifications, responses
  switch (m.method) {
    case "initialize":
      return reply(m.id, { protocolVersion: 1, agentCapabilities: {}, authMethods: [] });
    case "session/new":
    case "session/load": {
      const sessionId = m.method === "session/load"
        ? String(m.params?.sessionId)
        : `scribe-${sessions.size + 1}`;
      const folder = String(m.params?.cwd ?? process.cwd()).replace(/[^A-Za-z0-9]/g, "-");
      sessions.set(sessionId, join(home, "sessions", folder, `${sessionId}.jsonl`));
      return reply(m.id, m.method === "session/load" ? {} : { sessionId });
    }
    case "session/prompt":
      return prompt(m.id, m.params);
    default:
      return send({
        jsonrpc: "2.0",
        id: m.id,
        error: { code: -32601, message: `method not found: ${m.method}` },
      });
  }
});
