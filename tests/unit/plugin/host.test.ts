/**
 * The plugin host with real worker threads: calls, throws, the budget scopes, the restart
 * after a stopped plugin, and detectors run through it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findCause } from "../../../lib/cause/anchors.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { withPluginBudget } from "../../../lib/plugin/budget.ts";
import { PluginWorker, reviveExport } from "../../../lib/plugin/host.ts";
import { loadCodePlugins } from "../../../lib/config/packs.ts";
import { runDetector } from "../../../lib/publish/detect.ts";
import { ROOT } from "../../helpers/cli.ts";
import { classifyText, PLUGIN_CONTEXT } from "../../../lib/plugin_api.ts";

let dir: string;
/** Plugin files, all written before any is imported (the module resolver caches a directory). */
const FILES: Record<string, string> = {};
const plugin = (name: string, source: string) => ((FILES[name] = source), name);
const pathOf = (name: string) => join(dir, name);
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-host-"));
  for (const [name, source] of Object.entries(FILES)) writeFileSync(join(dir, name), source);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  for (const marker of MARKERS) rmSync(marker, { force: true });
});

const SOURCE = `
let calls = 0;
const spin = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} };
export default { anchors: [
  { id: "ok", on: ["log"], match: (i) => (calls++, i.line.includes("boom") ? { cause: "boom #" + calls } : null) },
  { id: "throws", on: ["log"], match: () => { throw new Error("kaput"); } },
  { id: "loops", on: ["log"], match: (i) => { if (i.line === "loop") for (;;) {} return null; } },
  { id: "slow", on: ["log"], match: (i) => (spin(/^\\d+$/.test(i.line) ? Number(i.line) : 200), null) },
  { id: "async", on: ["log"], match: async () => ({ cause: "late" }) },
]};
`;

const SHAPE = plugin(
  "shape.ts",
  "export default { anchors: [{ id: 'a', on: ['log'], match() {} }] };",
);
const P = plugin("p.ts", SOURCE);
const SLOW = plugin("slow.ts", SOURCE);
const LOOPS = plugin(
  "loops.ts",
  'export default { anchors: [{ id: "u.loops", priority: 9, on: ["log"], match() { for (;;) {} } }] };',
);
const CLASSIFIES = plugin(
  "classifies.ts",
  `export default {
  anchors: [{ id: "u.asks", on: ["log"], match(i, context) {
    const c = context.classify(i.line);
    return c.category === "unknown" ? null : { cause: i.line, category: c.category, retry: { afterMs: c.afterMs } };
  } }, { id: "u.long", on: ["text"], match(i, context) {
    return { cause: "long", category: context.classify("\\u0000".repeat(100000) + i.text).category };
  } }],
  readers: [{ id: "u.reads", read(r, context) {
    return { kind: "error", cause: r.message, category: context.classify(r.message).category };
  } }],
};`,
);
const GOOD = plugin(
  "good.ts",
  'export default { anchors: [{ id: "u.good", on: ["log"], match: (i) => i.line.startsWith("E") ? { cause: i.line } : null }] };',
);
const SLOW_IMPORT = plugin(
  "slow_import.ts",
  `const end = Date.now() + 800; while (Date.now() < end) {}
export default { anchors: [{ id: "si", on: ["log"], match: (i) => { if (i.line === "loop") for (;;) {} return { cause: i.line }; } }] };`,
);
/** Imports fine the first time; once `marker` exists, its import throws or never ends. */
const reimport = (name: string, marker: string, then: string) =>
  plugin(
    name,
    `import { existsSync, writeFileSync } from "node:fs";
const marker = ${JSON.stringify(marker)};
if (existsSync(marker)) { ${then} }
export default { anchors: [{ id: "r", on: ["log"], match: (i) => {
  if (i.line === "loop") { writeFileSync(marker, ""); for (;;) {} }
  return { cause: i.line };
} }] };`,
  );
const MARKERS = ["throws", "hangs"].map((k) =>
  join(tmpdir(), `tg-host-marker-${k}-${process.pid}`)
);
const REIMPORT_THROWS = reimport(
  "reimport_throws.ts",
  MARKERS[0],
  'throw new Error("token expired");',
);
const REIMPORT_HANGS = reimport(
  "reimport_hangs.ts",
  MARKERS[1],
  "for (;;) {}",
);
const BAD_DETECTOR = plugin(
  "bad_detector.ts",
  'export default { detectors: [{ id: "d.bad", detect() { throw new Error("nope"); } }] };',
);

describe("PluginWorker", () => {
  test("load gives the export's picture with functions marked", async () => {
    const w = new PluginWorker(pathOf(SHAPE));
    expect(await w.load()).toEqual({
      anchors: [{ id: "a", on: ["log"], match: { "$turnguard:function": true } }],
    });
    w.close();
  });

  test(
    "calls answer, throws and promises become errors; a loop is stopped and restarted",
    async () => {
      const w = new PluginWorker(pathOf(P), 300);
      const mod = reviveExport(await w.load(), (path, arg) => w.call(path, arg)) as {
        anchors: Array<{ match: (i: unknown) => unknown }>;
      };
      const [ok, throws, loops, , asyncOne] = mod.anchors;
      expect(ok.match({ kind: "log", line: "boom" })).toEqual({ cause: "boom #1" });
      expect(ok.match({ kind: "log", line: "calm" })).toBeNull();
      expect(() => throws.match({ kind: "log", line: "x" })).toThrow("kaput");
      expect(() => asyncOne.match({ kind: "log", line: "x" })).toThrow(
        "returned a Promise; plugin functions must answer synchronously",
      );
      withPluginBudget(() => {
        expect(() => loops.match({ kind: "log", line: "loop" })).toThrow(
          "ran longer than its 300 ms budget for this turn; it was stopped (and is restarted for the next turn)",
        );
        // The rest of this turn skips the stopped plugin without waiting again.
        expect(ok.match({ kind: "log", line: "boom" })).toBeNull();
      });
      // A fresh worker (fresh module state) answers in the next turn.
      expect(withPluginBudget(() => ok.match({ kind: "log", line: "boom" }))).toEqual({
        cause: "boom #1",
      });
      w.close();
    },
    20_000,
  );

  test("slow calls share one budget per scope; nested scopes join it", async () => {
    // 400 ms calls against a 1150 ms turn budget: two fit with 350 ms to spare for the calls'
    // own overhead on a loaded machine; the third cannot, since each spins 400 ms of wall time.
    const w = new PluginWorker(pathOf(SLOW), 1150);
    const mod = reviveExport(await w.load(), (path, arg) => w.call(path, arg)) as {
      anchors: Array<{ match: (i: unknown) => unknown }>;
    };
    const slow = mod.anchors[3];
    withPluginBudget(() => {
      expect(slow.match({ kind: "log", line: "400" })).toBeNull();
      expect(withPluginBudget(() => slow.match({ kind: "log", line: "400" }))).toBeNull();
      expect(() => withPluginBudget(() => slow.match({ kind: "log", line: "400" }))).toThrow(
        "ran longer than its 1150 ms budget for this turn",
      );
      expect(slow.match({ kind: "log", line: "skipped" })).toBeNull();
    });
    // A new scope has the whole budget again, even while await is never reached.
    withPluginBudget(() => {
      expect(slow.match({ kind: "log", line: "400" })).toBeNull();
      expect(slow.match({ kind: "log", line: "400" })).toBeNull();
    });
    w.close();
  }, 20_000);

  test("outside any scope each call has a budget of its own", async () => {
    const w = new PluginWorker(pathOf(SLOW), 300);
    const mod = reviveExport(await w.load(), (path, arg) => w.call(path, arg)) as {
      anchors: Array<{ match: (i: unknown) => unknown }>;
    };
    const slow = mod.anchors[3];
    // Three 200 ms calls in one synchronous run: each fits its own 300 ms budget.
    expect([1, 2, 3].map((n) => slow.match({ kind: "log", line: `${n}` }))).toEqual([
      null,
      null,
      null,
    ]);
    w.close();
  }, 20_000);
});

describe("restarts", () => {
  test(
    "the replacement starts right after the kill; its import is not charged to the next turn",
    async () => {
      // Importing takes 800 ms, four times the 200 ms call budget.
      const w = new PluginWorker(pathOf(SLOW_IMPORT), 200);
      const mod = reviveExport(await w.load(), (path, arg) => w.call(path, arg)) as {
        anchors: Array<{ match: (i: unknown) => unknown }>;
      };
      const match = mod.anchors[0].match;
      expect(() => match({ kind: "log", line: "loop" })).toThrow(
        "ran longer than its 200 ms budget for this turn",
      );
      expect(w.ready).toBe(false);
      // Nobody calls: the replacement imports in the background all the same.
      for (let i = 0; i < 100 && !w.ready; i++) await Bun.sleep(50);
      expect(w.ready).toBe(true);
      expect(withPluginBudget(() => match({ kind: "log", line: "after" }))).toEqual({
        cause: "after",
      });
      w.close();
    },
    20_000,
  );

  test("a call made while the replacement still imports waits for it, uncharged", async () => {
    const w = new PluginWorker(pathOf(SLOW_IMPORT), 200);
    const mod = reviveExport(await w.load(), (path, arg) => w.call(path, arg)) as {
      anchors: Array<{ match: (i: unknown) => unknown }>;
    };
    const match = mod.anchors[0].match;
    expect(() => match({ kind: "log", line: "loop" })).toThrow("ran longer than its 200 ms");
    expect(withPluginBudget(() => match({ kind: "log", line: "soon" }))).toEqual({
      cause: "soon",
    });
    w.close();
  }, 20_000);

  const failures: Array<[string, string]> = [
    [REIMPORT_THROWS, "its restarted worker failed to load: token expired"],
    [REIMPORT_HANGS, "its restarted worker did not finish loading within 1000 ms"],
  ];
  for (const [name, message] of failures) {
    test(`a replacement that cannot load: ${message}`, async () => {
      const w = new PluginWorker(pathOf(name), 200, 1000);
      const mod = reviveExport(await w.load(), (path, arg) => w.call(path, arg)) as {
        anchors: Array<{ match: (i: unknown) => unknown }>;
      };
      const match = mod.anchors[0].match;
      expect(() => match({ kind: "log", line: "loop" })).toThrow("ran longer than its 200 ms");
      withPluginBudget(() => {
        expect(() => match({ kind: "log", line: "next" })).toThrow(message);
        // The rest of the turn skips it.
        expect(match({ kind: "log", line: "again" })).toBeNull();
      });
      w.close();
    }, 20_000);
  }
});

describe("a user plugin's context (context.classify)", () => {
  test("its anchors and readers classify with the function the built-in packs use", async () => {
    const { anchors, readers } = await loadCodePlugins([
      { path: pathOf(CLASSIFIES), from: "test", line: null },
    ]);
    const line = "ERROR Rate limit reached. Please retry in 30s.";
    const r = withPluginBudget(() => findCause(buildClassifier(anchors), [{ kind: "log", line }]));
    expect(r.diagnostics).toEqual([]);
    expect(r.finding?.hit).toEqual({
      cause: line,
      category: classifyText(line).category,
      retry: { afterMs: 30_000 },
    });
    expect(r.finding?.hit.category).toBe("rate_limit");
    const message = '429 {"error":{"message":"Rate limited","code":"insufficient_quota"}}';
    expect(readers![0].read({ message }, PLUGIN_CONTEXT)).toEqual({
      kind: "error",
      cause: message,
      category: "quota",
    });
  }, 20_000);

  test("a text of any length and characters is asked by its head", async () => {
    const w = new PluginWorker(pathOf(CLASSIFIES), 2000, 10_000, PLUGIN_CONTEXT);
    try {
      await w.load();
      expect(w.call(["anchors", 1, "match"], { kind: "text", text: "429" }))
        .toEqual({ cause: "long", category: "unknown" });
    } finally {
      w.close();
    }
  }, 20_000);

  test("a host given no context answers the plugin's question with an error", async () => {
    const w = new PluginWorker(pathOf(CLASSIFIES));
    try {
      await w.load();
      expect(() => w.call(["anchors", 0, "match"], { kind: "log", line: "x" }))
        .toThrow("no classifier is given to this plugin host");
    } finally {
      w.close();
    }
  }, 20_000);
});

describe("code plugins in the matcher", () => {
  test("a looping plugin costs one diagnostic and the other plugins still decide", async () => {
    const loops = pathOf(LOOPS);
    const good = pathOf(GOOD);
    const { anchors } = await loadCodePlugins([
      { path: loops, from: "test", line: null },
      { path: good, from: "test", line: null },
    ], { budgetMs: 200 });
    const lines = ["I fine", "E broke", "I more"].map((line) => ({ kind: "log" as const, line }));
    const r = withPluginBudget(() => findCause(buildClassifier(anchors), lines));
    expect(r.finding?.anchor.id).toBe("u.good");
    expect(r.finding?.hit.cause).toBe("E broke");
    expect(r.diagnostics).toEqual([
      `anchor u.loops (${loops}) threw: ran longer than its 200 ms budget for this turn; ` +
      "it was stopped (and is restarted for the next turn)",
    ]);
  }, 20_000);

  test(
    "the example detector answers through its worker; a throwing one is a diagnostic",
    async () => {
      const bad = pathOf(BAD_DETECTOR);
      const { detectors } = await loadCodePlugins([
        { path: join(ROOT, "examples", "plugins", "slack_post.ts"), from: "test", line: null },
        { path: bad, from: "test", line: null },
      ]);
      const call = {
        toolCallId: "t1",
        title: "curl",
        rawInput: {
          command:
            `curl -X POST https://slack.com/api/chat.postMessage -d '{"channel":"C0123","text":"hi"}'`,
        },
      };
      const diagnostics: string[] = [];
      expect(runDetector(detectors[0], call, diagnostics)).toEqual({
        publish: true,
        channel: "C0123",
      });
      expect(
        runDetector(detectors[0], { toolCallId: "t2", rawInput: { command: "ls" } }, diagnostics),
      )
        .toBeNull();
      expect(runDetector(detectors[1], call, diagnostics)).toBeNull();
      expect(diagnostics).toEqual([`publish: detector d.bad (${bad}) threw: nope`]);
    },
    20_000,
  );
});
