/**
 * Example publish detector: a tool call that posts to Slack with
 *   curl -X POST https://slack.com/api/chat.postMessage -d '{"channel":"C0123","text":"..."}'
 * published the turn's reply. The detector sees the merged tool call (title, rawInput,
 * status, ...) and says whether it published, and where.
 */
import type { Detection, ToolCallState } from "../../lib/plugin_api.ts";

function commandOf(call: ToolCallState): string {
  const input = call.rawInput as { command?: unknown } | undefined;
  const command = input?.command;
  if (Array.isArray(command)) return command.join(" ");
  return typeof command === "string" ? command : "";
}

export default {
  detectors: [
    {
      id: "slack.post-message",
      detect(call: ToolCallState): Detection | null {
        const command = commandOf(call);
        if (!/\bcurl\b/.test(command) || !command.includes("slack.com/api/chat.postMessage")) {
          return null;
        }
        const channel = command.match(/"channel"\s*:\s*"([^"]+)"|channel=([\w-]+)/);
        return { publish: true, channel: channel ? channel[1] ?? channel[2] : null };
      },
    },
  ],
};
