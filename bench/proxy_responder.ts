/**
 * The agent of the latency benchmark: answers every request on the spot. A
 * `session/prompt` gets one streamed chunk and `end_turn`; anything else an empty result.
 */
import { Buffer } from "node:buffer";

const chunk = (sessionId: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: {
      sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "ok" } },
    },
  }) + "\n";

let held = Buffer.alloc(0);
process.stdin.on("data", (data: Buffer) => {
  let buf = held.length ? Buffer.concat([held, data]) : data;
  let out = "";
  for (let nl = buf.indexOf(10); nl !== -1; nl = buf.indexOf(10)) {
    const line = buf.subarray(0, nl).toString();
    buf = buf.subarray(nl + 1);
    if (!line.trim()) continue;
    const message = JSON.parse(line);
    if (message.id === undefined || message.method === undefined) continue;
    if (message.method === "session/prompt") {
      out += chunk(message.params.sessionId);
      out += JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { stopReason: "end_turn" } }) +
        "\n";
    } else {
      out += JSON.stringify({ jsonrpc: "2.0", id: message.id, result: {} }) + "\n";
    }
  }
  held = Buffer.from(buf);
  if (out) process.stdout.write(out);
});
