import { describe, expect, test } from "bun:test";
import buzzPlugin from "../../../plugins/buzz.ts";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import type { LoadedPublishDetector, ToolCallState } from "../../../lib/plugin/api.ts";
import { findPublish } from "../../../lib/publish/detect.ts";
import { callVerdict } from "../../../lib/publish/success.ts";
import { applyToolCallUpdate, mergeToolCall } from "../../../lib/acp/tool_calls.ts";

const buzz = builtinPlugins().detectors.find((d) => d.id === "buzz")!;
const call = (fields: Omit<ToolCallState, "toolCallId">, id = "t1"): ToolCallState => ({
  toolCallId: id,
  ...fields,
});
const completed = (command: unknown): ToolCallState =>
  call({ status: "completed", rawInput: { command } });

describe("the buzz detector is a built-in plugin", () => {
  test("registered in BUILTIN_PLUGINS with the public API", () => {
    expect(buzzPlugin.detectors?.map((d) => d.id)).toEqual(["buzz"]);
    expect(buzz.origin).toBe("builtin:buzz");
  });
});

describe("buzz detector — what is a publish, and to which channel", () => {
  const rows: Array<[string, unknown, { publish: boolean; channel: string | null } | null]> = [
    ["plain", "buzz messages send --channel C1 --content hi", { publish: true, channel: "C1" }],
    ["--channel=X", "buzz messages send --channel=C2 --content -", {
      publish: true,
      channel: "C2",
    }],
    ["no channel flag", "buzz messages send --content hi", { publish: true, channel: null }],
    ["argv array", ["buzz", "messages", "send", "--channel", "C3"], {
      publish: true,
      channel: "C3",
    }],
    ["bash -lc argv", ["bash", "-lc", "cd /w && buzz messages send --channel C4 --content -"], {
      publish: true,
      channel: "C4",
    }],
    ["printf pipeline", "printf '%s' 'it is 42' | buzz messages send --channel C5 --content -", {
      publish: true,
      channel: "C5",
    }],
    ["&& chain", "cd /tmp && buzz messages send --channel C6 && echo done", {
      publish: true,
      channel: "C6",
    }],
    ["heredoc", "buzz messages send --channel C7 --content - <<'EOF'\nhi\nEOF", {
      publish: true,
      channel: "C7",
    }],
    ["full path and env", "FOO=1 /usr/local/bin/buzz messages send --channel 'C 8'", {
      publish: true,
      channel: "C 8",
    }],
    ["global option first", "buzz --relay wss://r.example messages send --channel C9", {
      publish: true,
      channel: "C9",
    }],
    ["channel from a variable is unknown", 'buzz messages send --channel "$CH"', {
      publish: true,
      channel: null,
    }],
    ["decoy: echo", 'echo "buzz messages send"', null],
    ["decoy: grep", 'grep "messages send" notes', null],
    ["decoy: messages get", "buzz messages get --channel C1", null],
    ["decoy: reactions add", "buzz reactions add --channel C1 --emoji +1", null],
    ["decoy: in a quoted argument", "git commit -m 'buzz messages send --channel C1'", null],
    ["decoy: command -v", "command -v buzz messages send", null],
    ["decoy: subcommand split", "buzz messages list send", null],
    ["decoy: other program", "fizzbuzz messages send", null],
  ];
  for (const [name, command, want] of rows) {
    test(name, () => expect(buzz.detect(completed(command)) ?? null).toEqual(want));
  }

  test("rawInput.arguments.command", () => {
    const c = call({ rawInput: { arguments: { command: "buzz messages send --channel A" } } });
    expect(buzz.detect(c)).toEqual({ publish: true, channel: "A" });
  });

  test("the title, only when rawInput has no command", () => {
    const titled = call({ title: "`buzz messages send --channel T1 --content -`" });
    expect(buzz.detect(titled)).toEqual({ publish: true, channel: "T1" });
    const both = call({
      title: "buzz messages send --channel T1",
      rawInput: { command: "ls -la" },
    });
    expect(buzz.detect(both) ?? null).toBeNull();
  });

  test("no rawInput and no title", () => {
    expect(buzz.detect(call({ status: "completed" })) ?? null).toBeNull();
  });
});

describe("mergeToolCall — joined by toolCallId, later fields replace", () => {
  test("fields spread over tool_call and updates", () => {
    const calls = new Map<string, ToolCallState>();
    applyToolCallUpdate(calls, { sessionUpdate: "tool_call", toolCallId: "a", title: "Bash" });
    applyToolCallUpdate(calls, {
      sessionUpdate: "tool_call_update",
      toolCallId: "a",
      rawInput: { command: "buzz messages send" },
      status: "in_progress",
    });
    applyToolCallUpdate(calls, {
      sessionUpdate: "tool_call_update",
      toolCallId: "a",
      status: "completed",
      title: null,
      rawOutput: { exit_code: 0 },
    });
    expect(calls.get("a")).toEqual({
      toolCallId: "a",
      title: "Bash",
      rawInput: { command: "buzz messages send" },
      status: "completed",
      rawOutput: { exit_code: 0 },
    });
  });

  test("content is replaced whole; a wrongly typed status is dropped", () => {
    const first = mergeToolCall(undefined, {
      toolCallId: "b",
      content: [{ type: "content", content: { type: "text", text: "1" } }],
      status: "pending",
    });
    const next = mergeToolCall(first, { toolCallId: "b", content: [], status: 7 });
    expect(next).toEqual({ toolCallId: "b", content: [], status: "pending" });
  });

  test("other updates are ignored", () => {
    const calls = new Map<string, ToolCallState>();
    expect(applyToolCallUpdate(calls, { sessionUpdate: "agent_message_chunk" })).toBe(false);
    expect(applyToolCallUpdate(calls, { sessionUpdate: "tool_call" })).toBe(false);
    expect(calls.size).toBe(0);
  });
});

describe("callVerdict — success, not lifecycle", () => {
  const ok: ReturnType<typeof callVerdict> = { succeeded: true };
  const rows: Array<[string, Omit<ToolCallState, "toolCallId">, ReturnType<typeof callVerdict>]> = [
    ["completed", { status: "completed" }, ok],
    ["completed, exit 0", { status: "completed", rawOutput: { exit_code: 0 } }, ok],
    ["failed", { status: "failed" }, { succeeded: false, reason: "failed" }],
    ["cancelled", { status: "cancelled" }, { succeeded: false, reason: "cancelled" }],
    ["in_progress", { status: "in_progress" }, { succeeded: false, reason: "in_progress" }],
    ["never completed", {}, { succeeded: false, reason: "never reported a status" }],
    ["isError", { status: "completed", rawOutput: { isError: true } }, {
      succeeded: false,
      reason: "rawOutput.isError is true",
    }],
    ["is_error in _meta", { status: "completed", _meta: { tool: { is_error: true } } }, {
      succeeded: false,
      reason: "_meta.tool.is_error is true",
    }],
    ["exit_code 1", { status: "completed", rawOutput: { exit_code: 1 } }, {
      succeeded: false,
      reason: "exit code 1 (rawOutput.exit_code)",
    }],
    ["exitCode in _meta", { status: "completed", _meta: { exitCode: 2 } }, {
      succeeded: false,
      reason: "exit code 2 (_meta.exitCode)",
    }],
    ["code 127", { status: "completed", rawOutput: { code: 127 } }, {
      succeeded: false,
      reason: "exit code 127 (rawOutput.code)",
    }],
    ["nested code under exit", { status: "completed", rawOutput: { metadata: { exit: 3 } } }, {
      succeeded: false,
      reason: "exit code 3 (rawOutput.metadata.exit)",
    }],
    ["success: false", { status: "completed", rawOutput: { success: false } }, {
      succeeded: false,
      reason: "rawOutput.success is false",
    }],
    ["Exit code: 1 in content", {
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "Exit code: 1\nno relay" } }],
    }, { succeeded: false, reason: "exit code 1 (content)" }],
    ["exit status in rawOutput string", {
      status: "completed",
      rawOutput: "sending...\nexit status 4",
    }, { succeeded: false, reason: "exit code 4 (rawOutput)" }],
    ["Exit Code: 0 text", {
      status: "completed",
      rawOutput: { output: "Output: sent\nExit Code: 0" },
    }, ok],
    ["structured 0 decides over text", {
      status: "completed",
      rawOutput: { exit_code: 0, output: "Exit code: 1 was the content" },
    }, ok],
    ["a nested 'code' is not an exit code", {
      status: "completed",
      rawOutput: { response: { code: 404 } },
    }, ok],
  ];
  for (const [name, fields, want] of rows) {
    test(name, () => expect(callVerdict(call(fields))).toEqual(want));
  }
});

describe("findPublish — over merged calls", () => {
  const send = (channel: string | null) =>
    `buzz messages send${channel ? ` --channel ${channel}` : ""} --content -`;

  test("detected via tool_call alone", () => {
    const calls = new Map<string, ToolCallState>();
    applyToolCallUpdate(calls, {
      sessionUpdate: "tool_call",
      toolCallId: "x",
      status: "completed",
      rawInput: { command: send("C") },
    });
    const d: string[] = [];
    expect(findPublish([buzz], calls.values(), "C", d)).toEqual({
      detected: true,
      detector: "buzz",
      toolCallId: "x",
    });
    expect(d).toEqual([]);
  });

  test("detected via a later tool_call_update", () => {
    const calls = new Map<string, ToolCallState>();
    applyToolCallUpdate(calls, { sessionUpdate: "tool_call", toolCallId: "x", title: "Terminal" });
    expect(findPublish([buzz], calls.values(), "C", []).detected).toBe(false);
    applyToolCallUpdate(calls, {
      sessionUpdate: "tool_call_update",
      toolCallId: "x",
      rawInput: { command: ["bash", "-lc", send("C")] },
    });
    expect(findPublish([buzz], calls.values(), "C", []).detected).toBe(false);
    applyToolCallUpdate(calls, {
      sessionUpdate: "tool_call_update",
      toolCallId: "x",
      status: "completed",
    });
    expect(findPublish([buzz], calls.values(), "C", []).detected).toBe(true);
  });

  test("isError and a non-zero exit code keep the fallback armed", () => {
    for (const rawOutput of [{ isError: true }, { exit_code: 1 }, "Exit code: 2"]) {
      const d: string[] = [];
      const c = call({ status: "completed", rawInput: { command: send("C") }, rawOutput });
      expect(findPublish([buzz], [c], "C", d).detected).toBe(false);
      expect(d.length).toBe(1);
      expect(d[0]).toStartWith("publish: buzz saw tool call t1 publish, but it did not succeed (");
    }
  });

  test("failed and cancelled never count", () => {
    for (const status of ["failed", "cancelled", "pending", "in_progress"]) {
      const c = call({ status, rawInput: { command: send("C") } });
      expect(findPublish([buzz], [c], "C", []).detected).toBe(false);
    }
  });

  test("a publish to another channel does not count", () => {
    const d: string[] = [];
    const c = completed(send("OTHER"));
    expect(findPublish([buzz], [c], "C", d).detected).toBe(false);
    expect(d).toEqual([
      "publish: buzz saw tool call t1 publish to channel OTHER, not this turn's C",
    ]);
  });

  test("a publish with no channel flag counts for any channel", () => {
    expect(findPublish([buzz], [completed(send(null))], "C", []).detected).toBe(true);
  });

  test("the decoys do not count", () => {
    const decoys = [
      'echo "buzz messages send"',
      'grep "messages send" notes',
      "buzz messages get --channel C",
      "buzz reactions add --channel C",
    ].map((command, i) => call({ status: "completed", rawInput: { command } }, `d${i}`));
    expect(findPublish([buzz], decoys, "C", []).detected).toBe(false);
  });

  test("a throwing or malformed detector is a diagnostic", () => {
    const bad: LoadedPublishDetector[] = [
      {
        id: "boom",
        origin: "/p/boom.ts",
        detect: () => {
          throw new Error("kaput");
        },
      },
      { id: "odd", detect: () => ({ publish: "yes" }) as never },
      buzz,
    ];
    const d: string[] = [];
    expect(findPublish(bad, [completed(send("C"))], "C", d)).toEqual({
      detected: true,
      detector: "buzz",
      toolCallId: "t1",
    });
    expect(d[0]).toBe("publish: detector boom (/p/boom.ts) threw: kaput");
    expect(d[1]).toStartWith("publish: detector odd returned an invalid detection: ");
  });
});
