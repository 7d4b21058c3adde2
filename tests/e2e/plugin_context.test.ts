/**
 * A user plugin classifies text with turnguard's own classifier, through the compiled
 * binary: its anchor's `match` and its record reader's `read` get `context.classify`, which
 * the plugin's worker asks of the main thread (lib/plugin/worker.js, host.ts) — the function
 * the built-in packs import from lib/plugin_api.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { homeEnv, runProcess } from "../helpers/cli.ts";

let bin: string;
let dir: string;
beforeAll(() => {
  bin = ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "tg-context-"));
  // An agent whose log and session file say what failed in words only: the plugin gives the
  // words to context.classify and reports the category and retry time it answers.
  writeFileSync(
    join(dir, "words.ts"),
    `export default {
  anchors: [{
    id: "mine.words",
    priority: 500,
    on: ["log"],
    match(input, context) {
      if (input.kind !== "log" || !input.line.startsWith("upstream: ")) return null;
      const cause = input.line.slice("upstream: ".length);
      const c = context.classify(cause);
      if (c.category === "unknown") return null;
      return { cause, category: c.category, ...(c.afterMs !== undefined ? { retry: { afterMs: c.afterMs } } : {}) };
    },
  }],
  readers: [{
    id: "mine.chat",
    agents: ["mine"],
    read(record, context) {
      if (typeof record?.failure !== "string") return { kind: "prompt" };
      const c = context.classify(record.failure);
      return { kind: "error", cause: record.failure, category: c.category };
    },
  }],
};
`,
  );
  writeFileSync(
    join(dir, "turnguard.toml"),
    `plugins = ["words.ts"]\n\n[agent.mine]\nmatch = ["mine"]\n`,
  );
  writeFileSync(
    join(dir, "agent.log"),
    "upstream: all fine\nupstream: Rate limit reached for gpt-5. Please retry in 20s.\n",
  );
  writeFileSync(
    join(dir, "chat.jsonl"),
    `{"prompt":"hi"}\n${
      JSON.stringify({
        failure: '429 {"error":{"message":"Rate limited","code":"insufficient_quota"}}',
      })
    }\n`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tg = (args: string[]) => runProcess([bin, ...args], { env: homeEnv(dir), cwd: dir });

describe("context.classify in a user plugin, through dist/turnguard", () => {
  test("an anchor classifies a log line's words (category and retry time)", async () => {
    const log = join(dir, "agent.log");
    const r = await tg(["scan", "--json", "--config", join(dir, "turnguard.toml"), log]);
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout);
    const finding = out.findings.find((f: { anchor: string }) => f.anchor === "mine.words");
    expect(finding).toMatchObject({
      line: 2,
      category: "rate_limit",
      retry: { afterMs: 20_000 },
      cause: "Rate limit reached for gpt-5. Please retry in 20s.",
    });
    expect(r.code).toBe(0);
  }, 30_000);

  test("a record reader classifies a record's words: the provider's code gives quota", async () => {
    const r = await tg([
      "scan",
      "--json",
      "--kind",
      "records",
      "--agent",
      "mine",
      "--config",
      join(dir, "turnguard.toml"),
      join(dir, "chat.jsonl"),
    ]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain('"category":"quota"');
  }, 30_000);
});
