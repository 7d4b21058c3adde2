/**
 * End to end through `turnguard proxy` in front of the fake agent: an agent's own notices
 * are not replies (a turn of retry banners ending on a failure line fails; answers that
 * discuss errors stay ok; a profile's declared notices leave reply.text), and a session
 * record that names the provider's own cause refines the error the agent reported on the
 * wire (qwen-code's quota answered as JSON-RPC 429 "Rate limit exceeded").
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type * as acp from "@agentclientprotocol/sdk";
import { homeEnv, turnguard } from "../helpers/cli.ts";
import {
  killedAfterEach,
  openSession,
  prompt,
  readOutcomes,
  type Scratch,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

setDefaultTimeout(30_000);
const track = killedAfterEach();
const ANSWERS = join(import.meta.dir, "..", "fixtures", "answers");

/** Runs one prompt per entry through the proxy; the client's answers and the Outcomes. */
async function turns(s: Scratch, args: string[], prompts: string[]) {
  const p = startProxy(s, ["--outcome-file", s.outcomes, ...args]);
  track(p);
  const answers = await withClient(p, async (ctx) => {
    const sessionId = await openSession(ctx);
    const out: unknown[] = [];
    for (const text of prompts) {
      out.push(
        await prompt(ctx, sessionId, text).catch((err: acp.RequestError) => ({
          rejected: { code: err.code, message: err.message },
        })),
      );
    }
    return out;
  });
  await p.exited;
  return { answers, outcomes: readOutcomes(s.outcomes), stderr: p.stderr() };
}

/** The prompt that makes the fake agent stream `chunks`, one update each. */
const streamed = (chunks: string[]) => `stream-chunks ${JSON.stringify(chunks)}`;

/** A text cut into chunks of about `size` characters, as a model streams it. */
function chunked(text: string, size = 40): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

describe("agent notices are not replies", () => {
  test("retry banners ending on a failure line: failed with its category, answered as an error", async () => {
    const s = scratch();
    const { answers, outcomes } = await turns(s, ["--config", s.config, "--agent", "claude"], [
      streamed([
        "Retrying (attempt 1/2, waiting 1s)...",
        "Retrying (attempt 2/2, waiting 2s)...",
        "Error: 429 Too Many Requests",
      ]),
    ]);
    expect(answers[0]).toMatchObject({ rejected: { code: -32603 } });
    expect(outcomes[0]).toMatchObject({
      status: "failed",
      error: { category: "rate_limit", anchor: "notice" },
      retry: { retryable: true },
    });
  });

  test("answers that discuss errors stay ok, passed through unchanged", async () => {
    const s = scratch();
    const files = [
      "log_blockquote.txt",
      "python_retry_backoff.txt",
      "error_heading_first.txt",
      "ends_with_example_line.txt",
      "json_log_lines.txt",
    ];
    const texts = files.map((f) => readFileSync(join(ANSWERS, f), "utf8"));
    const { answers, outcomes } = await turns(
      s,
      ["--config", s.config, "--agent", "claude"],
      texts.map((t) => streamed(chunked(t))),
    );
    expect(answers).toEqual(files.map(() => ({ stopReason: "end_turn" })));
    expect(outcomes.map((o) => [o.status, o.error, o.reply.text])).toEqual(
      texts.map((t) => ["ok", null, t]),
    );
  });

  test("a profile's declared notices leave reply.text; the answer after them stands", async () => {
    const s = scratch();
    const config = join(s.dir, "pi.toml");
    writeFileSync(
      config,
      '[agent.claude]\nnotices = ["Queued message (position 1).", { regex = "Starting queued message\\\\. \\\\(\\\\d+ remaining\\\\)" }]\n',
    );
    const { outcomes } = await turns(s, ["--config", config, "--agent", "claude"], [
      streamed(["Queued message (position 1).", "Starting queued message. (0 remaining)", "Four."]),
    ]);
    expect(outcomes[0]).toMatchObject({ status: "ok", reply: { text: "Four.", chars: 5 } });
    expect(outcomes[0].diagnostics.join("\n")).toContain("leaves out 2 notice(s)");
  });
});

describe("run mode: the agent's output is read for notices too", () => {
  const run = (script: string) =>
    turnguard([
      "run",
      "--agent",
      "claude",
      "--no-journal",
      "--outcome-json",
      "--",
      "sh",
      "-c",
      script,
    ], {
      env: homeEnv(scratch().home),
    });
  test("an exit 0 whose output is notices ending on a failure: failed, exit 1", async () => {
    const r = await run(
      `printf 'Retrying (attempt 1/2, waiting 1s)...\\nAPI Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\\n'`,
    );
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: "failed",
      error: { category: "capacity", anchor: "notice" },
    });
  });
  test("an answer that discusses the same error: ok, exit 0", async () => {
    const r = await run(`cat '${join(ANSWERS, "log_blockquote.txt")}'`);
    expect([r.code, JSON.parse(r.stdout).status]).toEqual([0, "ok"]);
  });
});

describe("records refine an error the agent reported", () => {
  /** A user's agent whose reader reads the session file the fake agent writes. */
  function mine(s: Scratch, read: string): string {
    writeFileSync(
      join(s.dir, "reader.js"),
      `export default { readers: [{ id: "mine.chat", agents: ["mine"], read(r) {
        if (r.kind === "ask") return { kind: "prompt" };
        if (r.kind === "oops") return ${read};
        return null;
      } }] };\n`,
    );
    const config = join(s.dir, "mine.toml");
    writeFileSync(
      config,
      `plugins = ["reader.js"]\n[agent.mine]\nsession_records = ["$HOME/mine/{session}.jsonl"]\n`,
    );
    return config;
  }

  test("a provider's code in the records outranks the wire's 429: quota, not retryable", async () => {
    const s = scratch();
    const config = mine(s, `{ kind: "error", cause: r.why, code: r.code }`);
    const { answers, outcomes } = await turns(s, ["--config", config, "--agent", "mine"], [
      "records-quota",
    ]);
    expect(answers[0]).toMatchObject({ rejected: { code: 429 } });
    expect(outcomes[0]).toMatchObject({
      status: "failed",
      error: {
        category: "quota",
        code: "insufficient_quota",
        anchor: "records:mine.chat",
        message: expect.stringContaining("exceeded your current quota"),
      },
      retry: { retryable: false },
    });
    expect(outcomes[0].diagnostics.join("\n")).toContain(
      "its records hold the more specific cause",
    );
  });

  test("a record's category and retry time win over its words", async () => {
    const s = scratch();
    const config = mine(
      s,
      `{ kind: "error", cause: r.why, category: "capacity", retryAfterMs: 42000 }`,
    );
    const { outcomes } = await turns(s, ["--config", config, "--agent", "mine"], ["records-quota"]);
    expect(outcomes[0]).toMatchObject({
      status: "failed",
      error: { category: "capacity" },
      retry: { retryable: true, afterMs: 42000 },
    });
  });

  test("a record of words alone does not outrank the wire's own category", async () => {
    const s = scratch();
    const config = mine(s, `{ kind: "error", cause: "something went wrong upstream" }`);
    const { outcomes } = await turns(s, ["--config", config, "--agent", "mine"], ["records-quota"]);
    expect(outcomes[0]).toMatchObject({
      status: "failed",
      error: { category: "rate_limit", message: expect.stringContaining("Rate limit exceeded") },
    });
  });
});
