#!/usr/bin/env node
// A minimal ACP agent over stdio (newline-delimited JSON-RPC), without dependencies, for
// trying turnguard's client recipes (docs/CLIENTS.md). Three behaviours:
//
//   node acp_agent.mjs answer    streams "Hello from the example agent." and ends the turn
//   node acp_agent.mjs swallow   like an agent whose backend failed: it logs
//                                `ERROR backend: 429 Too Many Requests` to its log file and
//                                ends the turn with no text (exit 0, stop reason end_turn)
//   node acp_agent.mjs throw     like an agent built on the ACP SDK whose prompt handler
//                                throws: the SDK answers -32603 "Internal error" with the
//                                cause only in data.details (@agentclientprotocol/sdk,
//                                src/jsonrpc.ts errorToResult: RequestError.internalError)
//
// The log file is $ACP_EXAMPLE_LOG, else $HOME/.cache/turnguard-example/agent.log — the
// path examples/agents/turnguard.toml gives the `example` profile.
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";

const mode = process.argv[2] ?? "answer";
const log = process.env.ACP_EXAMPLE_LOG ??
  join(process.env.HOME ?? ".", ".cache", "turnguard-example", "agent.log");
let sessions = 0;

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const reply = (id, result) => send({ jsonrpc: "2.0", id, result });

function logLine(level, text) {
  mkdirSync(dirname(log), { recursive: true });
  appendFileSync(log, `${new Date().toISOString()} ${level} ${text}\n`);
}

/** The cause the failing modes report. */
const CAUSE = "backend: 429 Too Many Requests (rate limit exceeded for this API key)";

function prompt(id, params) {
  if (mode === "throw") {
    return send({
      jsonrpc: "2.0",
      id,
      error: { code: -32603, message: "Internal error", data: { details: `Error: ${CAUSE}` } },
    });
  }
  if (mode === "swallow") {
    logLine("WARN", "backend: 429 Too Many Requests, retrying in 1s");
    logLine("ERROR", CAUSE);
    return reply(id, { stopReason: "end_turn" });
  }
  for (const text of ["Hello from ", "the example agent."]) {
    send({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
      },
    });
  }
  reply(id, { stopReason: "end_turn" });
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  if (m.id === undefined || typeof m.method !== "string") return; // notifications, responses
  switch (m.method) {
    case "initialize":
      return reply(m.id, {
        protocolVersion: 1,
        agentCapabilities: { loadSession: false },
        authMethods: [],
        agentInfo: { name: "turnguard-example-agent", version: "1.0.0" },
      });
    case "authenticate":
      return reply(m.id, {});
    case "session/new":
      return reply(m.id, { sessionId: `example-${process.pid}-${++sessions}` });
    case "session/prompt":
      return prompt(m.id, m.params ?? {});
    default:
      send({
        jsonrpc: "2.0",
        id: m.id,
        error: { code: -32601, message: `${m.method}: not supported` },
      });
  }
});
lines.on("close", () => process.exit(0));
