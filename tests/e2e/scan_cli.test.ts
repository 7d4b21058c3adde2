/** `turnguard scan` and `turnguard explain`: output, JSON, stdin and exit codes. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, type Finished, MAIN, ROOT, turnguard } from "../helpers/cli.ts";
import { anchorLine } from "../helpers/anchors_toml.ts";

let home: string;
let log: string;
const Q = "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s";
const EXECUTOR =
  `E0707 08:34:23.910604   84 log.go:398] agent executor error: model unreachable: ${Q}.: model unreachable: ${Q}.`;
const CLAUDE =
  '{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error: Credit balance is too low","data":{"errorKind":"billing_error"}}}';

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-scan-"));
  log = join(home, "turn.log");
  writeFileSync(
    log,
    [
      "I0707 08:34:20.000000   84 agent.go:42] Antigravity CLI starting",
      `W0707 08:34:21.000000   84 planner.go:345] Encountered retryable api error. retrying in 1.48s. Error: ${Q}`,
      EXECUTOR,
      "",
      CLAUDE,
    ].join("\n") + "\n",
  );
  writeFileSync(join(home, "clean.log"), "I0707 all good\nI0707 done\n");
  // A code plugin that counts its calls in a file (a side effect the matcher must not double).
  writeFileSync(
    join(home, "count.ts"),
    `import { appendFileSync } from "node:fs";
export default { anchors: [{ id: "count.boom", on: ["log"], match(i) {
  appendFileSync(${JSON.stringify(join(home, "calls"))}, ".");
  return i.line.includes("BOOM") ? { cause: i.line, category: "crash" } : null;
} }] };
`,
  );
  writeFileSync(join(home, "count.toml"), 'plugins = ["count.ts"]\n');
  writeFileSync(join(home, "boom.log"), "I calm\nE BOOM here\nI calm again\n");
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const env = () => ({
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  TURNGUARD_CONFIG: undefined,
});
const tg = (args: string[]) => turnguard(args, { env: env(), cwd: home });

/** Runs turnguard from source with `input` on stdin. */
function withStdin(args: string[], input: string): Promise<Finished> {
  return new Promise((done, fail) => {
    const child = spawn(BUN, [MAIN, ...args], {
      cwd: home,
      env: { ...process.env, ...env() } as NodeJS.ProcessEnv,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe("turnguard scan", () => {
  test("prints every finding with anchor, category, retry, file:line and cause", async () => {
    const r = await tg(["scan", "turn.log"]);
    expect(r.stdout).toBe(
      `turn.log:2: agy.resource-exhausted [quota; quota: retry in 40h52m] ${Q}\n` +
        `turn.log:3: agy.executor [quota; quota: retry in 40h52m] agent executor error: model unreachable: ${Q}.\n` +
        "turn.log:5: claude.error-kind [quota; quota: no reset time given] Credit balance is too low\n" +
        "turn.log: a turn would report line 3 (agy.executor)\n",
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });

  test("--agent keeps to the profile's anchors", async () => {
    const r = await tg(["scan", "--agent", "claude", "turn.log"]);
    // Line 3 is logged at error level, so the generic rules (every profile's) read it too;
    // the claude anchor outranks them. agy's anchors stay out.
    expect(r.stdout).toStartWith("turn.log:3: generic.quota [quota; ");
    expect(r.stdout).not.toContain("agy.");
    expect(r.stdout).toEndWith(
      "turn.log:5: claude.error-kind [quota; quota: no reset time given] Credit balance is too low\n" +
        "turn.log: a turn would report line 5 (claude.error-kind)\n",
    );
    expect(r.code).toBe(0);
  });

  test("--json prints one document with findings, causes and diagnostics", async () => {
    const r = await tg(["scan", "--json", "turn.log", "clean.log"]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.findings).toHaveLength(3);
    expect(doc.findings[1]).toMatchObject({
      file: "turn.log",
      line: 3,
      kind: "log",
      anchor: "agy.executor",
      origin: `<embedded anchors.toml>:${anchorLine("agy.executor")}`,
      category: "quota",
      code: null,
      cause: `agent executor error: model unreachable: ${Q}.`,
      retry: { retryable: true, reason: "quota: retry in 40h52m", afterMs: 147166000 },
    });
    expect(doc.findings[2]).toMatchObject({ line: 5, kind: "error", anchor: "claude.error-kind" });
    expect(doc.causes).toEqual([{ file: "turn.log", line: 3, anchor: "agy.executor" }]);
    expect(doc.diagnostics).toEqual([]);
  });

  test("- reads stdin; --kind text reads each line as streamed text", async () => {
    const r = await withStdin(
      ["scan", "--kind", "text", "-"],
      "We're currently experiencing high demand, which may cause temporary errors.\n",
    );
    expect(r.stdout).toBe(
      "<stdin>:1: codex.high-demand [capacity; capacity: retry with backoff] We're currently experiencing high demand, which may cause temporary errors.\n" +
        "<stdin>: a turn would report line 1 (codex.high-demand)\n",
    );
    expect(r.code).toBe(0);
  });

  test("a code plugin named by --config loads under deno too", async () => {
    const examples = join(ROOT, "examples", "plugins");
    const r = await turnguard(
      ["scan", "--config", join(examples, "anchors.toml"), join(examples, "gateway.log")],
      { env: env(), cwd: home, runtime: "deno" },
    );
    expect(r.stdout).toContain(
      ":3: acme.gateway-budget [quota; quota: retry in 3h12m] budget exhausted for team=payments",
    );
    expect(r.code).toBe(0);
  });

  test("a large file is scanned to its last line under a small plugin budget", async () => {
    // 50,000 worker calls take far longer than 250 ms: the budget is per line, not per file.
    const gateway = join(ROOT, "examples", "plugins", "gateway_budget.ts");
    writeFileSync(
      join(home, "big.toml"),
      `plugins = [${JSON.stringify(gateway)}]\nplugin_budget_ms = 250\n`,
    );
    const quiet = "2026-03-02T10:15:01Z INFO  llm-gateway: request team=payments tokens=1834\n";
    const wall =
      "2026-03-02T10:15:04Z ERROR llm-gateway: budget exhausted for team=payments; window resets in 3h12m";
    writeFileSync(join(home, "big.log"), quiet.repeat(49_999) + wall + "\n");
    const r = await tg(["scan", "--config", "big.toml", "big.log"]);
    expect(r.stdout).toBe(
      "big.log:50000: acme.gateway-budget [quota; quota: retry in 3h12m] budget exhausted for team=payments; window resets in 3h12m\n" +
        "big.log: a turn would report line 50000 (acme.gateway-budget)\n",
    );
    expect(r.code).toBe(0);
  }, 60_000);

  test("each anchor runs once per line, and the turn's line comes from those runs", async () => {
    rmSync(join(home, "calls"), { force: true });
    const r = await tg(["scan", "--config", "count.toml", "--agent", "codex", "boom.log"]);
    expect(r.stdout).toBe(
      "boom.log:2: count.boom [crash; crash: not retryable] E BOOM here\n" +
        "boom.log: a turn would report line 2 (count.boom)\n",
    );
    expect(r.code).toBe(0);
    expect(readFileSync(join(home, "calls"), "utf8")).toBe("...");
  });

  test("nothing found exits 1", async () => {
    const r = await tg(["scan", "clean.log"]);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("turnguard: scan: no anchor matched\n");
    expect(r.code).toBe(1);
  });

  test("usage errors exit 2 with one line", async () => {
    const cases: Array<[string[], string]> = [
      [["scan"], "turnguard: scan: name at least one FILE, or - for stdin\n"],
      [["scan", "missing.log"], "turnguard: scan: cannot read missing.log (ENOENT)\n"],
      [
        ["scan", "--kind", "xml", "turn.log"],
        "turnguard: --kind xml: expected one of auto, log, text, error, records\n",
      ],
      [
        ["scan", "--agent", "nobody", "turn.log"],
        "turnguard: --agent nobody: no such agent profile (known: agy, gemini, claude, codex, qwen, pi, opencode)\n",
      ],
      [["scan", "--bogus", "turn.log"], "turnguard: scan: Unknown option '--bogus'\n"],
    ];
    for (const [args, stderr] of cases) {
      const r = await tg(args);
      expect({ args, stderr: r.stderr, code: r.code }).toEqual({ args, stderr, code: 2 });
    }
  });
});

describe("turnguard explain", () => {
  test("lists the anchors tried in order and why the winner won", async () => {
    const r = await tg(["explain", "--agent", "agy", EXECUTOR]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe(`input (log): ${EXECUTOR}`);
    // The agy anchors and, since the line is logged at error level (E0707), the generic ones.
    expect(lines[1]).toBe("tried 16 anchor(s), highest priority first, then load order:");
    expect(lines[2]).toBe(
      `  1. agy.executor  priority 300  <embedded anchors.toml>:${
        anchorLine("agy.executor")
      }  matched: agent executor error: model unreachable: ${Q}.`,
    );
    expect(lines[3]).toStartWith("  2. agy.model-unreachable  priority 200");
    expect(lines[4]).toStartWith("  3. agy.resource-exhausted  priority 100");
    expect(lines[5]).toBe(
      `  4. agy.unavailable  priority 100  <embedded anchors.toml>:${
        anchorLine("agy.unavailable")
      }  no match`,
    );
    // The provider vocabulary (vocabulary.toml) ranks between the agent's anchors and the
    // generic word rules.
    expect(lines[6]).toBe("  5. generic.vocabulary  priority 95  builtin:generic  no match");
    expect(lines[7]).toStartWith("  6. generic.quota  priority 90  builtin:generic  matched: ");
    expect(lines[8]).toStartWith(
      "  7. generic.rate-limit  priority 80  builtin:generic  matched: ",
    );
    expect(lines[12]).toBe(
      `  11. agy.not-logged-in  priority 50  <embedded anchors.toml>:${
        anchorLine("agy.not-logged-in")
      }  no match`,
    );
    expect(lines[18]).toStartWith("not tried (they do not read log inputs): generic.provider, ");
    expect(lines[19]).toBe(
      "winner: agy.executor — agy.executor has the highest priority (300) of the 6 anchors that matched",
    );
    lines.splice(1, 11);
    expect(lines[9]).toBe(`cause: agent executor error: model unreachable: ${Q}.`);
    expect(lines[10]).toBe("category: quota");
    expect(lines[11]).toStartWith("retry: quota: retry in 40h52m (afterMs 147166000, at ");
  });

  test("--json on an ACP error line", async () => {
    const r = await tg(["explain", "--json", CLAUDE]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.input.kind).toBe("error");
    expect(doc.winner).toBe("claude.error-kind");
    expect(doc.cause).toBe("Credit balance is too low");
    expect(doc.category).toBe("quota");
    expect(doc.tried[0]).toMatchObject({
      order: 1,
      anchor: "generic.provider",
      result: "no match",
    });
    expect(doc.why).toBe(
      "claude.error-kind has the highest priority (160) of the 3 anchors that matched",
    );
  });

  test("each anchor runs once", async () => {
    rmSync(join(home, "calls"), { force: true });
    const r = await tg(["explain", "--config", "count.toml", "--agent", "codex", "E BOOM now"]);
    expect(r.stdout).toContain("winner: count.boom — count.boom is the only anchor that matched\n");
    expect(r.code).toBe(0);
    expect(readFileSync(join(home, "calls"), "utf8")).toBe(".");
  });

  test("no anchor matched exits 1", async () => {
    const r = await tg(["explain", "--agent", "agy", "I0707 all good"]);
    expect(r.stdout).toContain("winner: none — no anchor matched (16 tried)\n");
    expect(r.code).toBe(1);
  });

  test("several inputs: one --json document each, in order; exit 1 when one matched nothing", async () => {
    const both = await tg(["explain", "--json", CLAUDE, EXECUTOR]);
    expect(both.code).toBe(0);
    const docs = both.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(docs.map((d) => [d.input.kind, d.winner, d.category])).toEqual([
      ["error", "claude.error-kind", "quota"],
      ["log", "agy.executor", "quota"],
    ]);
    const one = await tg(["explain", "--agent", "agy", EXECUTOR, "I0707 all good"]);
    expect(one.code).toBe(1);
    const texts = one.stdout.split("\n\ninput (log): ");
    expect(texts.length).toBe(2);
    expect(texts[0]).toStartWith(`input (log): ${EXECUTOR}\n`);
    expect(texts[0]).toContain("\nwinner: agy.executor — ");
    expect(texts[1]).toStartWith("I0707 all good\n");
    expect(texts[1]).toContain("\nwinner: none — no anchor matched (16 tried)\n");
    const twice = await tg(["explain", "-", "-"]);
    expect({ stderr: twice.stderr, code: twice.code }).toEqual({
      stderr: "turnguard: explain: stdin (-) can be read once\n",
      code: 2,
    });
  });
});
