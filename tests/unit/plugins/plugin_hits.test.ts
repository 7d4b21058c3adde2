/**
 * A plugin's hit is validated before anything downstream reads it: a retry hint that is no
 * time (`at: "tomorrow"`, `afterMs: NaN`, negative, infinite) is a diagnostic, the other
 * anchors still decide, and the turn's outcome is still emitted.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { tryMatch } from "../../../lib/cause/anchors.ts";
import { OutcomeSchema } from "../../../lib/core/outcome.ts";
import { AnchorSchema } from "../../../lib/plugin/api.ts";
import { loadCodePlugins } from "../../../lib/config/packs.ts";
import { FAKE_AGY, homeEnv, turnguard } from "../../helpers/cli.ts";

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-hits-"));
  // One plugin file per bad hint; `EXPR` is the retry hint its anchor returns.
  for (const [name, expr] of Object.entries(PLUGINS)) {
    writeFileSync(
      join(home, `${name}.ts`),
      `export default { anchors: [{ id: "user.${name}", priority: 500, on: ["log"], match(i) {
  return i.line.includes("executor error") ? { cause: "gateway says: quota", category: "quota", retry: ${expr} } : null;
} }] };\n`,
    );
    writeFileSync(join(home, `${name}.toml`), `plugins = ["${name}.ts"]\n`);
  }
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const PLUGINS = {
  tomorrow: '{ at: "tomorrow" }',
  nan: "{ afterMs: NaN }",
  negative: "{ afterMs: -5 }",
};

const inProcess = (retry: unknown) =>
  v.parse(AnchorSchema(), { id: "h", on: ["log"], match: () => ({ cause: "c", retry }) });

describe("AnchorHitSchema through tryMatch", () => {
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ at: "tomorrow" }, 'retry.at must be an ISO 8601 timestamp, not "tomorrow"'],
    [
      { at: "2026-01-01T00:00:00 +01:00" },
      'retry.at must be an ISO 8601 timestamp, not "2026-01-01T00:00:00 +01:00"',
    ],
    [{ afterMs: NaN }, "retry.afterMs must be a finite number of milliseconds >= 0, not NaN"],
    [{ afterMs: -1 }, "retry.afterMs must be a finite number of milliseconds >= 0, not -1"],
    [
      { afterMs: Infinity },
      "retry.afterMs must be a finite number of milliseconds >= 0, not Infinity",
    ],
    [{ afterMs: "5" }, 'retry.afterMs must be a finite number of milliseconds >= 0, not "5"'],
  ];
  for (const [retry, message] of bad) {
    const label = Object.entries(retry).map(([k, x]) =>
      `${k}: ${typeof x === "string" ? JSON.stringify(x) : String(x)}`
    ).join(", ");
    test(`{${label}} is a diagnostic`, () => {
      const diagnostics: string[] = [];
      expect(tryMatch(inProcess(retry), { kind: "log", line: "x" }, diagnostics)).toBeNull();
      expect(diagnostics).toEqual([`anchor h returned an invalid hit: ${message}`]);
    });
  }

  test("good hints pass", () => {
    for (
      const retry of [
        { afterMs: 0 },
        { afterMs: 1500.5 },
        { at: "2026-01-01T00:00:00Z" },
        { at: "2026-01-01T00:00:00.123+01:00", reason: "window" },
      ]
    ) {
      const diagnostics: string[] = [];
      expect(tryMatch(inProcess(retry), { kind: "log", line: "x" }, diagnostics)).toEqual({
        cause: "c",
        retry,
      });
      expect(diagnostics).toEqual([]);
    }
  });

  test(
    "NaN from a code plugin arrives as null (results cross as JSON) and is refused",
    async () => {
      const path = join(home, "nan.ts");
      const { anchors } = await loadCodePlugins([{ path, from: "test", line: null }]);
      const diagnostics: string[] = [];
      const hit = tryMatch(anchors[0], { kind: "log", line: "agent executor error" }, diagnostics);
      expect(hit).toBeNull();
      expect(diagnostics).toEqual([
        `anchor user.nan (${path}) returned an invalid hit: ` +
        "retry.afterMs must be a finite number of milliseconds >= 0, not null",
      ]);
    },
    20_000,
  );
});

describe("a turn whose code plugin gives a bad retry hint", () => {
  for (const name of Object.keys(PLUGINS)) {
    test(`${name}: the outcome is emitted, decided by the other anchors`, async () => {
      const r = await turnguard([
        "run",
        "--agent",
        "agy",
        "--config",
        join(home, `${name}.toml`),
        "--outcome-json",
        "--",
        FAKE_AGY,
        "--print",
        "hi",
      ], {
        env: homeEnv(home),
        cwd: home,
      });
      expect(r.code).toBe(1);
      const outcome = v.parse(OutcomeSchema(), JSON.parse(r.stdout));
      expect(outcome.status).toBe("failed");
      expect(outcome.error?.anchor).toBe("agy.executor");
      expect(outcome.retry?.afterMs).toBe(147166000);
      expect(outcome.diagnostics.filter((d) => d.includes("invalid hit"))).toEqual([
        `anchor user.${name} (${join(home, `${name}.ts`)}) returned an invalid hit: ` +
        (name === "tomorrow"
          ? 'retry.at must be an ISO 8601 timestamp, not "tomorrow"'
          : `retry.afterMs must be a finite number of milliseconds >= 0, not ${
            name === "nan" ? "null" : "-5"
          }`),
      ]);
    }, 20_000);
  }
});
