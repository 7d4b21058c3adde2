/**
 * A user plugin that loops on `context.classify` (each call answered by turnguard's main
 * thread, which blocks while it waits for the plugin's answer, lib/plugin/host.ts) attacks
 * the relay: its budget (`plugin_budget_ms`) is per turn, so a turn's live follower
 * (lib/cause/attempt_follower.ts), which looks every second, must charge every look to the
 * same budget — else the plugin blocks the relay for its whole budget on every look.
 * The plugin counts its own calls in a file (its worker is stopped when its budget runs out).
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AttemptFollower } from "../../../lib/cause/attempt_follower.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { turnRecords } from "../../../lib/cause/records_wait.ts";
import { pluginLedger } from "../../../lib/plugin/budget.ts";
import { takeSnapshot } from "../../../lib/cause/snapshot.ts";
import { loadCodePlugins } from "../../../lib/config/packs.ts";
import type { AgentAttempt } from "../../../lib/core/outcome.ts";

const dir = mkdtempSync(join(tmpdir(), "tg-hostile-context-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a user plugin that loops on context.classify, followed live", () => {
  test("is charged one budget for the whole turn, not one per look", async () => {
    const calls = join(dir, "calls");
    writeFileSync(
      join(dir, "loop.js"),
      `import { appendFileSync } from "node:fs";
export default {
  anchors: [{
    id: "mine.loop",
    priority: 500,
    on: ["log"],
    agents: ["mine"],
    match(input, context) {
      appendFileSync(${JSON.stringify(calls)}, "x");
      for (;;) context.classify("quota exceeded ".repeat(500));
    },
  }],
};
`,
    );
    const plugins = await loadCodePlugins([{
      path: join(dir, "loop.js"),
      from: "test",
      line: null,
    }], {
      budgetMs: 300,
    });
    const classifier = buildClassifier(plugins.anchors);
    const log = join(dir, "agent.log");
    writeFileSync(log, "");
    const seen: AgentAttempt[] = [];
    const told: string[] = [];
    const follower = new AttemptFollower({
      logs: takeSnapshot([log], Date.now()),
      logFormat: "plain",
      records: null,
      startedAt: Date.now(),
      classifier,
      readers: [],
      pid: () => null,
      onAttempt: (a) => seen.push(a),
      onDiagnostic: (d) => told.push(d),
    });
    for (let i = 0; i < 4; i++) {
      appendFileSync(log, `error: quota exceeded ${i}\n`);
      await follower.look();
    }
    expect(seen).toEqual([]);
    expect(told.join("\n")).toContain("budget");
    expect(existsSync(calls)).toBe(true);
    // Entered once: stopped for the rest of the turn after its budget ran out.
    expect(readFileSync(calls, "utf8")).toBe("x");
  });

  test("a records reader that loops is charged one budget over every read of the records wait", async () => {
    // A directory of its own: the runtime caches the listing of a directory it imported from.
    const own = join(dir, "reader");
    mkdirSync(own);
    const calls = join(own, "reads");
    writeFileSync(
      join(own, "reader.js"),
      `import { appendFileSync } from "node:fs";
export default {
  readers: [{
    id: "mine.loop",
    agents: ["mine"],
    endsTurn: true,
    read(record, context) {
      appendFileSync(${JSON.stringify(calls)}, "x");
      for (;;) context.classify("quota exceeded");
    },
  }],
};
`,
    );
    const plugins = await loadCodePlugins(
      [{ path: join(own, "reader.js"), from: "test", line: null }],
      { budgetMs: 300 },
    );
    const readers = plugins.readers ?? [];
    expect(readers.length).toBe(1);
    const read = {
      records: [{ path: "chat.jsonl", offset: 0, record: { type: "user" } }],
      diagnostics: [],
    };
    const ledger = pluginLedger();
    // The wait reads the records again and again (every 10 to 100 ms) until the end is there.
    for (let i = 0; i < 4; i++) expect(turnRecords(read, readers, 1, ledger).ended).toBe(false);
    expect(readFileSync(calls, "utf8")).toBe("x");
  });
});
