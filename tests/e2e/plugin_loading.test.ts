/**
 * User code plugins through the compiled binary: loaded from the paths a config names (the
 * examples/plugins ones included), never from the working directory; malformed modules are
 * start-up errors naming the file; a plugin that throws or loops while a turn is decided
 * costs a diagnostic, never the turn's outcome.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { OutcomeSchema } from "../../lib/core/outcome.ts";
import { ensureBinary } from "../helpers/binary.ts";
import { FAKE_AGY, homeEnv, ROOT, runProcess } from "../helpers/cli.ts";

let bin: string;
let home: string;
beforeAll(() => {
  bin = ensureBinary();
  home = mkdtempSync(join(tmpdir(), "tg-plugins-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const env = () => homeEnv(home);
const tg = (args: string[], cwd = home) => runProcess([bin, ...args], { env: env(), cwd });

/** Writes files into a fresh directory and returns its path. */
function dir(files: Record<string, string>): string {
  const d = mkdtempSync(join(home, "case-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(d, name, ".."), { recursive: true });
    writeFileSync(join(d, name), text);
  }
  return d;
}

const EXAMPLES = join(ROOT, "examples", "plugins");

describe("examples/plugins through dist/turnguard", () => {
  test("scan finds the example anchor plugin's and declarative anchor's lines", async () => {
    const log = join(EXAMPLES, "gateway.log");
    const r = await tg(["scan", "--config", join(EXAMPLES, "anchors.toml"), log]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(
      `${log}:2: acme.gateway-down [capacity; capacity: retry in 2s] upstream unavailable (503), retrying in 2s\n` +
        `${log}:3: acme.gateway-budget [quota; quota: retry in 3h12m] budget exhausted for team=payments (spent 500.00 USD of 500.00 USD); window resets in 3h12m\n` +
        `${log}: a turn would report line 3 (acme.gateway-budget)\n`,
    );
    expect(r.code).toBe(0);
  });

  test("check loads both example plugins and lists them per profile", async () => {
    const r = await tg(["check", "--json", "--config", join(EXAMPLES, "anchors.toml")]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.plugins).toEqual([
      join(EXAMPLES, "gateway_budget.ts"),
      join(EXAMPLES, "slack_post.ts"),
    ]);
    expect(report.pluginBudgetMs).toBe(2000);
    expect(report.detectors).toContainEqual({
      id: "slack.post-message",
      origin: join(EXAMPLES, "slack_post.ts"),
    });
    const agy = report.profiles.find((p: { name: string }) => p.name === "agy");
    expect(agy.anchors).toContainEqual({
      id: "acme.gateway-budget",
      priority: 120,
      on: ["log", "text"],
      origin: join(EXAMPLES, "gateway_budget.ts"),
    });
  });
});

describe("never from the working directory", () => {
  test("an anchors.toml and plugins in the cwd that no config names are not loaded", async () => {
    const marker = join(home, "pwned");
    const evil = `import { writeFileSync } from "node:fs";\nwriteFileSync(${
      JSON.stringify(marker)
    }, "ran");\nexport default { anchors: [{ id: "evil.all", priority: 999, on: ["log"], match: () => ({ cause: "evil" }) }] };\n`;
    const cwd = dir({
      "anchors.toml": 'plugins = ["evil.ts"]\n',
      "evil.ts": evil,
      "turnguard.ts": evil,
      "plugins/evil.ts": evil,
      ".turnguard/anchors.toml": 'plugins = ["../evil.ts"]\n',
      "x.log": "nothing to see\n",
    });
    const check = await tg(["check", "--json"], cwd);
    expect(check.code).toBe(0);
    expect(JSON.parse(check.stdout).plugins).toEqual([]);
    expect(check.stdout).not.toContain("evil");
    const scan = await tg(["scan", "x.log"], cwd);
    expect(scan.code).toBe(1);
    expect(scan.stdout).toBe("");
    expect(existsSync(marker)).toBe(false);
  });
});

describe("malformed plugins are start-up errors naming the file", () => {
  const cases: Array<[string, string, string]> = [
    [
      "a missing field",
      'export default { anchors: [{ id: "x", match: () => null }] };\n',
      "export default.anchors[0].on: missing `on`",
    ],
    [
      "match of the wrong type",
      'export default { anchors: [{ id: "x", on: ["log"], match: "always" }] };\n',
      "export default.anchors[0].match: match must be a function",
    ],
    [
      "a priority of the wrong type",
      'export default { anchors: [{ id: "x", priority: "high", on: ["log"], match() { return null; } }] };\n',
      'export default.anchors[0].priority: Invalid type: Expected number but received "high"',
    ],
    [
      "an unknown key",
      "export default { anchors: [], hooks: [] };\n",
      "export default.hooks: unknown key `hooks`",
    ],
    [
      "no default export",
      "export const anchors = [];\n",
      "export default: a plugin must default-export { anchors, detectors }",
    ],
    [
      "a module that throws at import",
      'throw new Error("no gateway token in the environment");\n',
      "plugin failed to load: no gateway token in the environment",
    ],
  ];
  for (const [name, source, detail] of cases) {
    test(name, async () => {
      const d = dir({ "anchors.toml": 'plugins = ["bad.ts"]\n', "bad.ts": source });
      const r = await tg(["check", "--config", join(d, "anchors.toml")]);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`turnguard: ${join(d, "bad.ts")}: ${detail}\n`);
      expect(r.code).toBe(2);
    });
  }

  test("a plugin path that does not exist names the config line", async () => {
    const d = dir({ "anchors.toml": '# mine\nplugins = ["gone.ts"]\n' });
    const r = await tg(["check", "--config", join(d, "anchors.toml")]);
    expect(r.stderr).toBe(
      `turnguard: ${join(d, "gone.ts")}: plugin file not found (named in ${
        join(d, "anchors.toml")
      }:2)\n`,
    );
    expect(r.code).toBe(2);
  });
});

describe("plugins that fail while a turn is decided", () => {
  test(
    "a throwing and a looping plugin cost diagnostics; the outcome and other plugins stay",
    async () => {
      const d = dir({
        "anchors.toml": [
          'plugins = ["loops.ts", "throws.ts", "good.ts"]',
          "plugin_budget_ms = 300",
          "",
        ].join("\n"),
        "loops.ts":
          'export default { anchors: [{ id: "user.loops", priority: 500, on: ["log"], match(i) { if (i.line.includes("executor")) for (;;) {} return null; } }] };\n',
        "throws.ts":
          'export default { anchors: [{ id: "user.throws", priority: 450, on: ["log"], match() { throw new Error("kaput"); } }] };\n',
        "good.ts":
          'export default { anchors: [{ id: "user.good", priority: 400, on: ["log"], match(i) { return i.line.includes("executor error") ? { cause: "gateway says: quota", category: "quota" } : null; } }] };\n',
      });
      const r = await tg([
        "run",
        "--agent",
        "agy",
        "--config",
        join(d, "anchors.toml"),
        "--outcome-json",
        "--",
        FAKE_AGY,
        "--print",
        "hi",
      ], d);
      expect(r.code).toBe(1);
      const outcome = v.parse(OutcomeSchema(), JSON.parse(r.stdout));
      expect(outcome.status).toBe("failed");
      expect(outcome.error?.anchor).toBe("user.good");
      expect(outcome.error?.message).toBe("gateway says: quota");
      expect(outcome.error?.category).toBe("quota");
      expect(outcome.diagnostics).toContain(
        `anchor user.loops (${join(d, "loops.ts")}) threw: ran longer than its 300 ms budget ` +
          "for this turn; it was stopped (and is restarted for the next turn)",
      );
      expect(outcome.diagnostics).toContain(
        `anchor user.throws (${join(d, "throws.ts")}) threw: kaput`,
      );
      expect(r.stderr).toBe("turnguard: agy failed (quota): gateway says: quota\n");
    },
    30_000,
  );

  test("one budget per turn: the log scan and the stderr classification share it", async () => {
    const d = dir({
      "anchors.toml": 'plugins = ["loops.ts"]\nplugin_budget_ms = 300\n',
      "loops.ts":
        'export default { anchors: [{ id: "user.loops", on: ["log", "text"], match() { for (;;) {} } }] };\n',
    });
    const r = await runProcess([
      bin,
      "run",
      "--agent",
      "agy",
      "--config",
      join(d, "anchors.toml"),
      "--outcome-json",
      "--",
      FAKE_AGY,
      "--print",
      "hi",
    ], { env: { ...env(), FAKE_AGY: "stderr-fail" }, cwd: d });
    expect(r.code).toBe(3);
    const outcome = v.parse(OutcomeSchema(), JSON.parse(r.stdout));
    expect(outcome.error?.category).toBe("auth");
    // Stopped once while the log was scanned; skipped, not run again, for the stderr.
    expect(outcome.diagnostics.filter((x) => x.includes("user.loops"))).toEqual([
      `anchor user.loops (${join(d, "loops.ts")}) threw: ran longer than its 300 ms budget ` +
      "for this turn; it was stopped (and is restarted for the next turn)",
    ]);
  }, 30_000);
});
