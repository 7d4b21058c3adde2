import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import type { ToolCallState } from "../../../lib/plugin/api.ts";
import {
  type PublishContext,
  type PublishTurn,
  settlePublish,
} from "../../../lib/publish/engine.ts";
import { type FallbackSpec, runFallback } from "../../../lib/publish/fallback.ts";
import { publishSettings } from "../../../lib/publish/settings.ts";
import { fillPlaceholders } from "../../../lib/publish/vars.ts";

const FIXTURES = resolve(import.meta.dirname ?? ".", "..", "..", "fixtures", "publish");
const BUZZ = join(FIXTURES, "buzz");
const buzzDetectors = builtinPlugins().detectors.filter((d) => d.id === "buzz");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-buzz-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** What the fake buzz received, one entry per invocation. */
function received(): Array<{ argv: string[]; stdin: string }> {
  const n = readdirSync(dir).filter((f) => f.endsWith(".argv")).length;
  return Array.from({ length: n }, (_, i) => {
    const raw = readFileSync(join(dir, `${i}.argv`), "utf8");
    return {
      argv: raw === "" ? [] : raw.slice(0, -1).split("\0"),
      stdin: readFileSync(join(dir, `${i}.stdin`), "utf8"),
    };
  });
}

const env = (extra: Record<string, string> = {}) => ({
  ...process.env,
  PATH: `${FIXTURES}:${process.env.PATH}`,
  BUZZ_RECORD_DIR: dir,
  ...extra,
});

const spec = (over: Partial<FallbackSpec>): FallbackSpec => ({
  argv: [BUZZ],
  stdin: null,
  timeoutMs: 10_000,
  env: env(),
  ...over,
});

/** Text no shell could pass through unharmed. */
const HOSTILE = [
  `It's "quoted" and 'single' \\ backslash`,
  "$(touch /tmp/pwned) `id` ${HOME} $HOME",
  "line two\r\nline three\n\n  indented; rm -rf / && echo | cat > x < y",
  "* ? [a-z] ~ {channel} {{}} # not a comment",
  "unicode: é € 😀 \u202e rtl",
  "-n --content -",
].join("\n");

describe("runFallback — argv, never a shell", () => {
  test("hostile text on stdin and as an argument arrives byte-exact", async () => {
    const filled = fillPlaceholders(
      [BUZZ, "messages", "send", "--channel", "{channel}", "--content", "{text}", "--x={text}"],
      new Map([["channel", "C 1; $(x)"], ["text", HOSTILE]]),
    );
    if (!filled.ok) throw new Error("placeholders");
    const result = await runFallback(spec({ argv: filled.argv, stdin: HOSTILE }));
    expect(result).toEqual({ sent: true, exitCode: 0, signal: null, timedOut: false, stderr: "" });
    expect(received()).toEqual([{
      argv: ["messages", "send", "--channel", "C 1; $(x)", "--content", HOSTILE, `--x=${HOSTILE}`],
      stdin: HOSTILE,
    }]);
    expect(existsSync("/tmp/pwned")).toBe(false);
  });

  test("no stdin: the command reads an empty input", async () => {
    const result = await runFallback(spec({ argv: [BUZZ, "a"], stdin: null }));
    expect(result.sent).toBe(true);
    expect(received()).toEqual([{ argv: ["a"], stdin: "" }]);
  });

  test("a non-zero exit: not sent, exit code and stderr tail kept", async () => {
    const result = await runFallback(
      spec({ stdin: "x", env: env({ BUZZ_EXIT: "3", BUZZ_STDERR: "relay said no: é" }) }),
    );
    expect(result).toEqual({
      sent: false,
      exitCode: 3,
      signal: null,
      timedOut: false,
      stderr: "relay said no: é",
    });
    expect(received().length).toBe(1);
  });

  test("a long stderr keeps only its tail, on a character boundary", async () => {
    const result = await runFallback(spec({
      stdin: "x",
      env: env({ BUZZ_STDERR: "€".repeat(1000) + "END", BUZZ_EXIT: "1" }),
    }));
    expect(result.stderr.endsWith("€END")).toBe(true);
    expect(result.stderr.startsWith("€")).toBe(true);
    expect(Buffer.byteLength(result.stderr)).toBeLessThanOrEqual(2048);
  });

  test("bounded time: killed, not sent, not retried", async () => {
    const result = await runFallback(
      spec({ stdin: "x", timeoutMs: 1500, env: env({ BUZZ_SLEEP: "30" }) }),
    );
    expect(result.sent).toBe(false);
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(result.signal).toBe("SIGTERM");
    expect(result.stderr).toBe("timed out after 1500ms");
    expect(received().length).toBe(1);
  });

  test("a missing command is a result, not a throw", async () => {
    expect(await runFallback(spec({ argv: [join(dir, "nope")], stdin: "x" }))).toEqual({
      sent: false,
      exitCode: null,
      signal: null,
      timedOut: false,
      stderr: `${join(dir, "nope")}: command not found`,
    });
    expect((await runFallback(spec({ argv: [] }))).stderr).toBe("fallback command is empty");
    const nul = await runFallback(spec({ argv: [BUZZ, "a\0b"] }));
    expect(nul.sent).toBe(false);
    expect(nul.stderr).toStartWith(`cannot run ${BUZZ}: `);
  });
});

describe("settlePublish — the engine with a real fake buzz", () => {
  const ctx = (over: Partial<PublishContext> = {}): PublishContext => ({
    settings: publishSettings(undefined, true),
    detectors: buzzDetectors,
    vars: new Map([["channel", "C1"]]),
    env: env(),
    ...over,
  });
  const turn = (over: Partial<PublishTurn> = {}): PublishTurn => ({
    sessionId: "s1",
    stopReason: "end_turn",
    failed: false,
    text: "The answer is 42.",
    toolCalls: [],
    promptMeta: { turnguard: { reply_to: "E1" } },
    ...over,
  });

  test("a forgetful turn: exactly one message, threaded to --reply-to", async () => {
    const result = await settlePublish(ctx(), turn());
    expect(result).toEqual({
      publish: {
        armed: true,
        detected: false,
        detector: null,
        channel: "C1",
        fallback: { sent: true, exitCode: 0 },
      },
      diagnostics: ["publish: the agent did not publish its reply; turnguard sent it with buzz"],
    });
    expect(received()).toEqual([{
      argv: ["messages", "send", "--channel", "C1", "--reply-to", "E1", "--content", "-"],
      stdin: "The answer is 42.",
    }]);
  });

  test("a turn that published: nothing sent", async () => {
    const published: ToolCallState = {
      toolCallId: "t1",
      status: "completed",
      rawInput: { command: "buzz messages send --channel C1 --reply-to E1 --content -" },
    };
    const result = await settlePublish(ctx(), turn({ toolCalls: [published] }));
    expect(result).toEqual({
      publish: { armed: true, detected: true, detector: "buzz", channel: "C1", fallback: null },
      diagnostics: [],
    });
    expect(received()).toEqual([]);
  });

  test("a failed publish keeps the fallback armed", async () => {
    const failed: ToolCallState = {
      toolCallId: "t1",
      status: "completed",
      rawInput: { command: "buzz messages send --channel C1 --content -" },
      rawOutput: { exit_code: 1 },
    };
    const result = await settlePublish(ctx(), turn({ toolCalls: [failed] }));
    expect(result.publish?.fallback).toEqual({ sent: true, exitCode: 0 });
    expect(result.diagnostics[0]).toBe(
      "publish: buzz saw tool call t1 publish, but it did not succeed (exit code 1 (rawOutput.exit_code))",
    );
    expect(received().length).toBe(1);
  });

  test("disarmed: nothing looked at, publish is null", async () => {
    expect(await settlePublish(ctx({ settings: null }), turn())).toEqual({
      publish: null,
      diagnostics: [],
    });
    expect(received()).toEqual([]);
  });

  test("not end_turn, or failed: nothing sent", async () => {
    for (const over of [{ stopReason: "refusal" }, { stopReason: null, failed: true }]) {
      const result = await settlePublish(ctx(), turn(over));
      expect(result.publish?.fallback).toBeNull();
    }
    expect(received()).toEqual([]);
  });

  test("no channel: nothing sent, and said so", async () => {
    const result = await settlePublish(ctx({ vars: new Map() }), turn());
    expect(result.publish).toMatchObject({ channel: null, fallback: null });
    expect(result.diagnostics).toEqual([
      "publish: the reply was not published and no turn variable channel names its channel; nothing was sent",
    ]);
    expect(received()).toEqual([]);
  });

  test("the per-prompt _meta.turnguard channel wins over --var", async () => {
    await settlePublish(
      ctx(),
      turn({ promptMeta: { turnguard: { channel: "C9", reply_to: "E" } } }),
    );
    expect(received()[0].argv.slice(3, 4)).toEqual(["C9"]);
  });

  test("a missing placeholder variable: nothing sent, named in the outcome", async () => {
    const result = await settlePublish(ctx(), turn({ promptMeta: undefined }));
    expect(result.publish?.fallback).toEqual({
      sent: false,
      exitCode: null,
      stderr: "the fallback command needs {reply_to}, which no turn variable sets",
    });
    expect(received()).toEqual([]);
  });

  test("a failing fallback is a diagnostic, run once", async () => {
    const result = await settlePublish(
      ctx({ env: env({ BUZZ_EXIT: "2", BUZZ_STDERR: "no route to relay" }) }),
      turn(),
    );
    expect(result.publish?.fallback).toEqual({
      sent: false,
      exitCode: 2,
      stderr: "no route to relay",
    });
    expect(result.diagnostics).toEqual([
      "publish: the fallback buzz exited with status 2: no route to relay; the reply was not published (not retried)",
    ]);
    expect(received().length).toBe(1);
  });

  test("a printed publish command: the content it meant is sent", async () => {
    const text =
      "```bash\nbuzz messages send --channel C1 --reply-to E1 --content 'Meant reply'\n```";
    const result = await settlePublish(ctx(), turn({ text }));
    expect(result.publish?.fallback?.sent).toBe(true);
    expect(received()[0].stdin).toBe("Meant reply");
  });

  test("{text} in argv with stdin off", async () => {
    const settings = publishSettings({
      armed: true,
      command: ["buzz", "post", "--to", "{channel}", "--body", "{text}"],
    }, false);
    await settlePublish(ctx({ settings }), turn({ text: HOSTILE }));
    expect(received()).toEqual([{
      argv: ["post", "--to", "C1", "--body", HOSTILE],
      stdin: "",
    }]);
  });
});
