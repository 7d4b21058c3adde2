/** `turnguard check`: what is active per profile, JSON, and exit 2 with the first error. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { AnchorSchema } from "../../lib/plugin/api.ts";
import { buildClassifier } from "../../lib/cause/classifier.ts";
import { findCause, type Finding } from "../../lib/cause/anchors.ts";
import { explain, pickWinner } from "../../lib/cause/explain.ts";
import { turnguard } from "../helpers/cli.ts";
import { anchorLine } from "../helpers/anchors_toml.ts";

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-check-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const tg = (args: string[]) =>
  turnguard(args, {
    env: { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), TURNGUARD_CONFIG: undefined },
    cwd: home,
  });
const config = (name: string, text: string) => {
  const path = join(home, name);
  writeFileSync(path, text);
  return path;
};

describe("turnguard check", () => {
  test("prints a short summary by default, one line per profile, and exits 0", async () => {
    const r = await tg(["check"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("config: <embedded anchors.toml>");
    expect(lines[2]).toMatch(/^profile agy — matches agy, antigravity: \d+ anchor\(s\)$/);
    expect(lines.some((l) => l.startsWith("    "))).toBe(false);
    expect(lines.at(-1)).toEndWith("0 code plugin file(s) (--verbose lists them)");
    expect(lines.length).toBe(11);
  });

  test("--verbose prints the active anchors per profile and exits 0", async () => {
    const r = await tg(["check", "--verbose"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("config: <embedded anchors.toml>");
    expect(lines[1]).toBe("code plugins: none");
    expect(lines[2]).toBe("profile agy — matches agy, antigravity");
    expect(lines[3]).toBe("  logs (glog): $HOME/.gemini/antigravity-cli/log/cli-*.log");
    expect(lines[5]).toBe(
      `    agy.executor  priority 300  on log  <embedded anchors.toml>:${
        anchorLine("agy.executor")
      }`,
    );
    expect(lines).toContain("profile claude — matches claude-agent-acp, claude-code-acp");
    expect(lines).toContain("profile (other commands)");
    expect(lines).toContain("    claude.error-kind  priority 160  on error  builtin:claude");
    const json = JSON.parse((await tg(["check", "--json"])).stdout);
    const ids = new Set<string>(
      json.profiles.flatMap((p: { anchors: { id: string }[] }) => p.anchors.map((a) => a.id)),
    );
    expect(lines.at(-1)).toBe(
      `ok: 7 profile(s), ${ids.size} anchor(s), ${json.detectors.length} detector(s), 0 code plugin file(s)`,
    );
  });

  test("--json: agent-bound anchors only in their profile", async () => {
    const r = await tg(["check", "--json"]);
    const report = JSON.parse(r.stdout);
    expect(report.profiles.map((p: { name: string }) => p.name)).toEqual([
      "agy",
      "gemini",
      "claude",
      "codex",
      "qwen",
      "pi",
      "opencode",
      "(other commands)",
    ]);
    const ids = (name: string) =>
      report.profiles.find((p: { name: string }) => p.name === name).anchors.map((
        a: { id: string },
      ) => a.id);
    expect(ids("agy")).toContain("agy.executor");
    expect(ids("gemini")).not.toContain("agy.executor");
    expect(ids("(other commands)")).toContain("generic.quota");
    expect(report.pluginBudgetMs).toBe(2000);
  });

  test("a user file's budget and anchors are merged in", async () => {
    const path = config(
      "ok.toml",
      'plugin_budget_ms = 750\n[[anchor]]\nid = "mine.boom"\nliteral = "BOOM"\nagents = ["codex"]\n',
    );
    const report = JSON.parse((await tg(["check", "--json", "--config", path])).stdout);
    expect(report.files).toEqual(["<embedded anchors.toml>", path]);
    expect(report.pluginBudgetMs).toBe(750);
    const codex = report.profiles.find((p: { name: string }) => p.name === "codex");
    expect(codex.anchors).toContainEqual({
      id: "mine.boom",
      priority: 0,
      on: ["log"],
      origin: `${path}:2`,
    });
  });

  test("exit 2 with the first error, naming file, line and key", async () => {
    const cases: Array<[string, string, (p: string) => string]> = [
      [
        "budget.toml",
        "plugin_budget_ms = 0\n",
        (p) => `turnguard: ${p}:1: plugin_budget_ms: Invalid value: Expected >=1 but received 0\n`,
      ],
      [
        "regex.toml",
        '[[anchor]]\nid = "x"\nregex = "("\n',
        (p) => `turnguard: ${p}:3: anchor[0].regex: is not a valid regular expression\n`,
      ],
      [
        "key.toml",
        'plugin = ["a.ts"]\n',
        (p) => `turnguard: ${p}:1: plugin: unknown key \`plugin\`\n`,
      ],
    ];
    for (const [name, text, expected] of cases) {
      const path = config(name, text);
      const r = await tg(["check", "--config", path]);
      expect({ name, stdout: r.stdout, stderr: r.stderr, code: r.code }).toEqual({
        name,
        stdout: "",
        stderr: expected(path),
        code: 2,
      });
    }
    const missing = await tg(["check", "--config", join(home, "none.toml")]);
    expect(missing.stderr).toBe(
      `turnguard: ${join(home, "none.toml")}: cannot read config file (ENOENT)\n`,
    );
    expect(missing.code).toBe(2);
  });
});

describe("check sees what the proxy would reject", () => {
  test("an unknown publish detector is exit 2, worded as the proxy words it", async () => {
    const known = JSON.parse((await tg(["check", "--json"])).stdout).detectors.map((
      d: { id: string },
    ) => d.id).join(", ");
    const path = config("nope.toml", '[agent.agy.publish]\ndetectors = ["nope"]\n');
    const r = await tg(["check", "--config", path]);
    const expected = {
      stdout: "",
      stderr:
        `turnguard: agent profile agy: publish.detectors names unknown detector "nope" (known: ${known})\n`,
      code: 2,
    };
    expect({ stdout: r.stdout, stderr: r.stderr, code: r.code }).toEqual(expected);
    // The proxy rejects the same table once the fallback is armed.
    const p = await tg([
      "proxy",
      "--agent",
      "agy",
      "--publish-fallback",
      "--config",
      path,
      "--",
      "true",
    ]);
    // ...as its own config error: 125, the wrappers' code, where check says 2.
    expect({ stdout: p.stdout, stderr: p.stderr, code: p.code }).toEqual({
      ...expected,
      code: 125,
    });
  });

  test("an anchors pattern that matches no anchor is a warning, not an error", async () => {
    const path = config("pattern.toml", '[agent.agy]\nanchors = ["agy.*", "foo.*"]\n');
    const r = await tg(["check", "--config", path]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.filter((l) => l.startsWith("warning:"))).toEqual([
      'warning: agent agy: anchors pattern "foo.*" matches no anchor',
    ]);
    expect(lines.at(-1)).toStartWith("ok: 7 profile(s), ");
    const report = JSON.parse((await tg(["check", "--json", "--config", path])).stdout);
    expect(report.warnings).toEqual([
      'agent agy: anchors pattern "foo.*" matches no anchor',
    ]);
  });
});

describe("check: a regex that may take exponential time", () => {
  test("is a warning naming file, line, key and anchor; the built-in ones have none", async () => {
    const path = config(
      "risky.toml",
      '# gateway errors\n[[anchor]]\nid = "gw.loop"\nregex = "^(\\\\w+\\\\s?)*failed$"\n',
    );
    const r = await tg(["check", "--config", path]);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n").filter((l) => l.startsWith("warning:"))).toEqual([
      `warning: ${path}:4: anchor[0].regex (gw.loop): the group at character 2 repeats (*) ` +
      "and holds an unbounded repetition: it may take exponential time on some lines",
    ]);
    const plain = await tg(["check"]);
    expect(plain.stdout).not.toContain("warning:");
  });
});

describe("explain (pure)", () => {
  const anchor = (id: string, priority: number) =>
    v.parse(AnchorSchema(), {
      id,
      priority,
      on: ["text"],
      match: (i: { text: string }) => (i.text.includes("x") ? { cause: id } : null),
    });
  test("a tie on priority is won by load order, and the loser is named", () => {
    const e = explain(buildClassifier([anchor("a", 1), anchor("b", 5), anchor("c", 5)]), {
      kind: "text",
      text: "x",
    });
    expect(e.trials.map((t) => [t.anchor.id, t.order, t.result])).toEqual([
      ["b", 1, "matched"],
      ["c", 2, "matched"],
      ["a", 3, "matched"],
    ]);
    expect(e.winner?.anchor.id).toBe("b");
    expect(e.winner?.hit).toEqual({ cause: "b" });
    expect(e.why).toBe(
      "b has the highest priority (5) of the 3 anchors that matched; c matched with the same " +
        "priority but load later",
    );
  });

  test("each anchor is called once, and a failed one is not the winner", () => {
    const calls: string[] = [];
    const counting = (id: string, priority: number, answer: () => unknown) =>
      v.parse(AnchorSchema(), {
        id,
        priority,
        on: ["text"],
        match: () => (calls.push(id), answer()),
      });
    const e = explain(
      buildClassifier([
        counting("low", 1, () => ({ cause: "low" })),
        counting("bad", 9, () => ({ cause: "" })),
        counting("mid", 5, () => ({ cause: "mid" })),
        counting("none", 7, () => null),
      ]),
      { kind: "text", text: "x" },
    );
    expect(calls).toEqual(["bad", "none", "mid", "low"]);
    expect(e.trials.map((t) => [t.anchor.id, t.result])).toEqual([
      ["bad", "failed"],
      ["none", "no match"],
      ["mid", "matched"],
      ["low", "matched"],
    ]);
    expect(e.winner).toEqual({ anchor: e.trials[2].anchor, hit: { cause: "mid" }, index: 0 });
    expect(e.diagnostics).toEqual([
      "anchor bad returned an invalid hit: Invalid length: Expected >=1 but received 0",
    ]);
  });

  test("pickWinner over per-input findings equals findCause over all the inputs", () => {
    const anchors = buildClassifier([
      anchor("a", 1), // matches any "x"
      v.parse(AnchorSchema(), {
        id: "y",
        priority: 5,
        on: ["text"],
        match: (i: { text: string }) => (i.text.includes("y") ? { cause: `y:${i.text}` } : null),
      }),
      anchor("c", 1),
      anchor("d", 5),
    ]);
    const ordered = anchors.candidates(["text"]);
    const cases = [[], ["-"], ["x"], ["x", "y"], ["y", "x", "y"], ["xy", "x"], ["-", "x", "-"]];
    for (const texts of cases) {
      const inputs = texts.map((text) => ({ kind: "text" as const, text }));
      const perInput: Finding[] = inputs.flatMap((input, index) => {
        const { finding } = findCause(anchors, [input]);
        return finding ? [{ ...finding, index }] : [];
      });
      const picked = pickWinner(ordered, perInput);
      const whole = findCause(anchors, inputs).finding;
      expect({ texts, picked: picked && [picked.anchor.id, picked.index, picked.hit] }).toEqual({
        texts,
        picked: whole && [whole.anchor.id, whole.index, whole.hit],
      });
    }
  });
});
