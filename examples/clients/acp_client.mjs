#!/usr/bin/env node
// An ACP client (the TypeScript SDK, @agentclientprotocol/sdk) that spawns
// `turnguard proxy` in place of the agent, sends one prompt and prints what came back:
// the streamed text, then the stop reason — or the error turnguard surfaced.
//
//   node acp_client.mjs PROMPT -- turnguard proxy [OPTIONS] -- AGENT_CMD [ARGS...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const split = process.argv.indexOf("--");
const text = process.argv[2];
const [command, ...args] = process.argv.slice(split + 1);
if (split < 0 || !text || !command) {
  console.error("usage: acp_client.mjs PROMPT -- turnguard proxy ... -- AGENT_CMD ...");
  process.exit(2);
}

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const app = acp.client({ name: "turnguard-example-client" }).onNotification(
  "session/update",
  ({ params }) => {
    const u = params.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
      process.stdout.write(u.content.text);
    }
  },
);

let code = 0;
await app.connectWith(stream, async (ctx) => {
  try {
    await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    const { sessionId } = await ctx.request("session/new", { cwd: process.cwd(), mcpServers: [] });
    const { stopReason } = await ctx.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    process.stdout.write(`\n[stop: ${stopReason}]\n`);
  } catch (err) {
    // A failed turn: turnguard's reading is in error.data.turnguard.
    const reading = err?.data?.turnguard;
    console.log(`[error ${err?.code}] ${err?.message}` + (reading ? ` (${reading.category})` : ""));
    code = 1;
  }
}).finally(() => agent.stdin.end());
await new Promise((resolve) => agent.once("close", resolve));
process.exit(code);
