import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { OutcomeSchema } from "../../lib/core/outcome.ts";
import { spawn } from "node:child_process";
import { BUN, DENO, FAKE_AGY, homeEnv, MAIN, turnguard } from "../helpers/cli.ts";

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tg-run-"));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const env = (extra: Record<string, string> = {}) => homeEnv(home, extra);
const QUOTA_LINE =
  "turnguard: agy failed (quota): agent executor error: model unreachable: RESOURCE_EXHAUSTED (code 429): Individual quota reached. Please upgrade your subscription to increase your limits. Resets in 40h52m46s. — retry in 40h52m\n";

describe("turnguard run with a fake agy", () => {
  test("a swallowed quota failure exits 1 with the cause on one stderr line", async () => {
    const r = await turnguard(["run", "--", FAKE_AGY, "--print", "say hi"], { env: env() });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(QUOTA_LINE);
  });

  test("--outcome-json prints exactly one valid Outcome on stdout", async () => {
    const r = await turnguard(["run", "--outcome-json", "--", FAKE_AGY, "--print", "hi"], {
      env: env(),
    });
    expect(r.code).toBe(1);
    const outcome = v.parse(OutcomeSchema(), JSON.parse(r.stdout));
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(outcome.status).toBe("failed");
    expect(outcome.mode).toBe("run");
    expect(outcome.agent).toBe("agy");
    expect(outcome.error?.category).toBe("quota");
    expect(outcome.error?.code).toBe(429);
    expect(outcome.error?.anchor).toBe("agy.executor");
    expect(outcome.error?.source?.path).toStartWith(join(home, ".gemini/antigravity-cli/log/cli-"));
    expect(outcome.retry?.retryable).toBe(true);
    expect(outcome.retry?.afterMs).toBe(147166000);
    expect(outcome.exit).toEqual({ code: 0, signal: null });
    // The log directory appeared during the turn (first run): nothing to report.
    expect(outcome.diagnostics).toEqual([]);
  });

  test("ok: stdout passes through, exit 0; --outcome-file gets the reply", async () => {
    const file = join(home, "out.json");
    const r = await turnguard(["run", "--outcome-file", file, "--", FAKE_AGY, "--print", "hi"], {
      env: env({ FAKE_AGY: "ok" }),
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("hi there\n");
    expect(r.stderr).toBe("");
    const outcome = v.parse(OutcomeSchema(), JSON.parse(readFileSync(file, "utf8")));
    expect(outcome.status).toBe("ok");
    expect(outcome.reply).toEqual({ chars: 9, text: "hi there\n" });
  });

  test("an honest empty turn stays exit 0 with status empty", async () => {
    const r = await turnguard(["run", "--outcome-json", "--", FAKE_AGY, "--print", "hi"], {
      env: env({ FAKE_AGY: "empty" }),
    });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).status).toBe("empty");
  });

  test("an agent that fails by itself keeps its exit code and its stderr", async () => {
    const r = await turnguard(["run", "--outcome-json", "--", FAKE_AGY], {
      env: env({ FAKE_AGY: "stderr-fail" }),
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toBe("Error: 401 Unauthorized: please run agy login\n");
    const o = JSON.parse(r.stdout);
    expect(o.error.category).toBe("auth");
    expect(o.error.message).toBe("Error: 401 Unauthorized: please run agy login");
    expect(o.retry.retryable).toBe(false);
  });

  test("runs the same under deno", async () => {
    const r = await turnguard(["run", "--", FAKE_AGY, "--print", "say hi"], {
      env: env(),
      runtime: "deno",
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(QUOTA_LINE);
  });

  test("two concurrent agents sharing one log file: the empty one reports empty", async () => {
    const shared = { FAKE_AGY_LOG_NAME: "shared", FAKE_AGY_SLEEP: "0.5" };
    const [quota, empty] = await Promise.all([
      turnguard(["run", "--outcome-json", "--", FAKE_AGY], {
        env: env({ ...shared, FAKE_AGY: "quota" }),
      }),
      turnguard(["run", "--outcome-json", "--", FAKE_AGY], {
        env: env({ ...shared, FAKE_AGY: "empty" }),
      }),
    ]);
    expect(JSON.parse(quota.stdout).status).toBe("failed");
    expect(JSON.parse(empty.stdout).status).toBe("empty");
    expect(empty.code).toBe(0);
    const log = readFileSync(join(home, ".gemini/antigravity-cli/log/cli-shared.log"), "utf8");
    expect(new Set(log.match(/^\w\d{4} \S+\s+(\d+)/gm)!.map((l) => l.split(/\s+/)[2])).size).toBe(
      2,
    );
  });

  test("stdout is streamed as it arrives, not buffered until exit", async () => {
    // The agent prints "first", then waits until the test has seen it: if turnguard held
    // stdout back until the agent exits, neither would ever go on (the test times out).
    const agent = join(home, "slow-agent");
    const go = join(home, "go");
    writeFileSync(
      agent,
      `#!/bin/sh\necho first\nwhile [ ! -e "${go}" ]; do sleep 0.05; done\necho second\n`,
      { mode: 0o755 },
    );
    const r = await turnguard(["run", "--", agent], {
      env: env(),
      onSpawn: (child) =>
        child.stdout!.on(
          "data",
          (c: Buffer) => c.toString().includes("first") && writeFileSync(go, ""),
        ),
    });
    expect(r.stdout).toBe("first\nsecond\n");
    expect(r.code).toBe(0);
  });

  // Under Bun the agent runs through Bun.spawn (lib/run/bun_pass_through.ts), under Deno
  // through node:child_process (lib/run/run.ts): both paths keep the same promises.
  for (const runtime of ["bun", "deno"] as const) {
    test(`a grandchild holding stdout open does not hang the turn (${runtime})`, async () => {
      const agent = join(home, "leaves-a-child");
      writeFileSync(agent, "#!/bin/sh\nsleep 30 &\necho answer\n", { mode: 0o755 });
      const started = Date.now();
      const r = await turnguard(["run", "--outcome-json", "--", agent], { env: env(), runtime });
      expect(JSON.parse(r.stdout).reply.text).toBe("answer\n");
      expect(Date.now() - started).toBeLessThan(20_000);
    });
  }
});

describe("pass-through under pressure", () => {
  /** `turnguard run -- sh -c SCRIPT` from source under `runtime`, its output piped. */
  const runUnder = (runtime: "bun" | "deno", script: string) =>
    spawn(
      runtime === "bun" ? BUN : DENO,
      [...(runtime === "bun" ? [] : ["run", "-A"]), MAIN, "run", "--", "sh", "-c", script],
      { env: { ...process.env, ...env() } as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] },
    );

  for (const runtime of ["bun", "deno"] as const) {
    test(`a slow reader still gets every byte after the agent has exited (${runtime})`, async () => {
      const child = runUnder(runtime, "head -c 300000 /dev/zero");
      let received = 0;
      child.stdout!.on("data", (chunk: Buffer) => {
        received += chunk.length;
        child.stdout!.pause();
        setTimeout(() => child.stdout!.resume(), 600);
      });
      const ended = new Promise((done) => child.stdout!.once("end", done));
      const code = await new Promise((done) => child.on("close", done));
      await ended;
      expect(received).toBe(300000);
      expect(code).toBe(0);
    });

    test(`a reader that goes away does not hang the wrapper (agent | head) (${runtime})`, async () => {
      const child = runUnder(runtime, "yes | head -c 30000000");
      let stderr = "";
      child.stderr!.on("data", (c) => (stderr += c));
      child.stdout!.once("data", () => child.stdout!.destroy());
      const code = await new Promise((done) => child.on("close", done));
      // The agent meets a closed pipe (SIGPIPE, or ECONNRESET on a socket pair) and stops;
      // turnguard neither hangs nor crashes nor adds a failure line of its own.
      expect(code).not.toBe(0);
      expect(stderr).not.toContain("turnguard");
      expect(stderr).not.toContain("EPIPE");
    });
  }

  test("whitespace alone is no answer: a swallowed quota failure still shows", async () => {
    const agent = join(home, "agy");
    writeFileSync(agent, `#!/bin/sh\nFAKE_AGY=quota "${FAKE_AGY}" "$@"\necho\n`, { mode: 0o755 });
    const r = await turnguard(["run", "--", agent], { env: env() });
    expect(r.stdout).toBe("\n");
    expect(r.code).toBe(1);
    expect(r.stderr).toStartWith("turnguard: agy failed (quota): agent executor error:");
  });
});

describe("signals and exit codes", () => {
  const waitForLog = async () => {
    const dir = join(home, ".gemini/antigravity-cli/log");
    for (let i = 0; i < 200; i++) {
      if (existsSync(dir) && readdirSync(dir).length > 0) {
        const text = readFileSync(join(dir, readdirSync(dir)[0]), "utf8");
        const m = text.match(/^I\d{4} \S+\s+(\d+) /m);
        if (m) return Number(m[1]);
      }
      await Bun.sleep(25);
    }
    throw new Error("agent never started");
  };
  for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130], ["SIGHUP", 129]] as const) {
    test(`${signal} is forwarded to the agent; exit ${code}, status cancelled, no orphan`, async () => {
      let agentPid = 0;
      const r = await turnguard(["run", "--outcome-json", "--", FAKE_AGY], {
        env: env({ FAKE_AGY: "ok", FAKE_AGY_SLEEP: "30" }),
        onSpawn: async (child) => {
          agentPid = await waitForLog();
          child.kill(signal);
        },
      });
      expect(r.code).toBe(code);
      const o = JSON.parse(r.stdout);
      expect(o.status).toBe("cancelled");
      expect(o.exit).toEqual({ code: null, signal });
      expect(() => process.kill(agentPid, 0)).toThrow();
    });
  }

  test("SIGQUIT is forwarded too (to an agent that handles it)", async () => {
    // Shells started with SIGQUIT ignored cannot trap it, so this agent is a Bun script.
    const agent = join(home, "quit-agent.ts");
    const seen = join(home, "seen");
    writeFileSync(
      agent,
      `process.on("SIGQUIT", () => { require("node:fs").writeFileSync(${
        JSON.stringify(seen)
      }, "quit"); process.exit(7); });
       console.error("ready"); setTimeout(() => {}, 30000);`,
    );
    const r = await turnguard(["run", "--outcome-json", "--", BUN, agent], {
      env: env(),
      onSpawn: (child) =>
        child.stderr!.on(
          "data",
          (c: Buffer) => c.toString().includes("ready") && child.kill("SIGQUIT"),
        ),
    });
    expect(readFileSync(seen, "utf8")).toBe("quit");
    expect(r.code).toBe(7);
    expect(JSON.parse(r.stdout).status).toBe("cancelled");
  });

  test("an agent killed by a signal it was not sent: failed (crash), exit 128+N", async () => {
    const agent = join(home, "suicidal");
    writeFileSync(agent, "#!/bin/sh\nkill -SEGV $$\n", { mode: 0o755 });
    const r = await turnguard(["run", "--outcome-json", "--", agent], { env: env() });
    expect(r.code).toBe(139);
    const o = JSON.parse(r.stdout);
    expect(o.status).toBe("failed");
    expect(o.error.message).toBe("killed by signal SIGSEGV");
  });

  test("command not found: 127 with one line; not executable: 126", async () => {
    const r = await turnguard(["run", "--", join(home, "no-such-agent")], { env: env() });
    expect(r.code).toBe(127);
    expect(r.stderr).toBe(
      `turnguard: no-such-agent failed (crash): ${
        join(home, "no-such-agent")
      }: command not found\n`,
    );
    const plain = join(home, "plain");
    writeFileSync(plain, "not a program", { mode: 0o644 });
    expect((await turnguard(["run", "--", plain], { env: env() })).code).toBe(126);
  });
});

describe("usage and config errors exit 125 (as env and timeout do) before any agent starts", () => {
  test("unknown flag", async () => {
    const r = await turnguard(["run", "--bogus", "--", "true"], { env: env() });
    expect(r.code).toBe(125);
    expect(r.stderr).toBe("turnguard: run: Unknown option '--bogus'\n");
  });
  test("missing command", async () => {
    const r = await turnguard(["run", "--agent", "agy"], { env: env() });
    expect(r.code).toBe(125);
    expect(r.stderr).toStartWith("turnguard: run: missing the agent command");
  });
  test("unknown --agent", async () => {
    const r = await turnguard(["run", "--agent", "nope", "--", "true"], { env: env() });
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(
      "turnguard: --agent nope: no such agent profile (known: agy, gemini, claude, codex, qwen, pi, opencode)\n",
    );
  });
  test("a bad regex names file, line and key; the agent never runs", async () => {
    const cfg = join(home, "bad.toml");
    const marker = join(home, "ran");
    writeFileSync(cfg, '[agent.agy]\nlogs = ["/tmp/x"]\n\n[[anchor]]\nid = "x"\nregex = "("\n');
    const r = await turnguard(["run", "--config", cfg, "--", "touch", marker], { env: env() });
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(
      `turnguard: ${cfg}:6: anchor[0].regex: is not a valid regular expression\n`,
    );
    expect(existsSync(marker)).toBe(false);
  });
  test("an unknown key and a wrong type, from $TURNGUARD_CONFIG and XDG", async () => {
    const cfg = join(home, "unknown.toml");
    writeFileSync(cfg, "[agent.agy]\nlogz = []\n");
    const r = await turnguard(["run", "--", "true"], { env: env({ TURNGUARD_CONFIG: cfg }) });
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(`turnguard: ${cfg}:2: agent.agy.logz: unknown key \`logz\`\n`);
    mkdirSync(join(home, ".config", "turnguard"), { recursive: true });
    const xdg = join(home, ".config", "turnguard", "anchors.toml");
    writeFileSync(xdg, "[agent.agy]\n\nlogs = 5\n");
    const r2 = await turnguard(["run", "--", "true"], { env: env() });
    expect(r2.code).toBe(125);
    expect(r2.stderr).toStartWith(`turnguard: ${xdg}:3: agent.agy.logs: Invalid type`);
  });
  test("a TOML syntax error names the line", async () => {
    const cfg = join(home, "syntax.toml");
    writeFileSync(cfg, "[agent.agy]\nlogs = [\n");
    const r = await turnguard(["run", "--config", cfg, "--", "true"], { env: env() });
    expect(r.code).toBe(125);
    expect(r.stderr).toStartWith(`turnguard: ${cfg}:3: Invalid TOML document`);
  });
  test("an --outcome-file that cannot be opened: exit 2, the agent never runs", async () => {
    const marker = join(home, "ran");
    const file = join(home, "no", "such", "dir", "out.jsonl");
    const r = await turnguard(["run", "--outcome-file", file, "--", "touch", marker], {
      env: env(),
    });
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(
      `turnguard: --outcome-file ${file}: cannot open for appending (ENOENT)\n`,
    );
    expect(existsSync(marker)).toBe(false);
  });
  test("--outcome-file appends one line per turn", async () => {
    const file = join(home, "out.jsonl");
    for (const mode of ["ok", "quota"]) {
      await turnguard(["run", "--outcome-file", file, "--", FAKE_AGY], {
        env: env({ FAKE_AGY: mode }),
      });
    }
    const lines = readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l).status);
    expect(lines).toEqual(["ok", "failed"]);
  });
  test("a missing --config file", async () => {
    const r = await turnguard(["run", "--config", join(home, "none.toml"), "--", "true"], {
      env: env(),
    });
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(
      `turnguard: ${join(home, "none.toml")}: cannot read config file (ENOENT)\n`,
    );
  });
});

describe("diagnostics and schema", () => {
  test("--verbose prints the diagnostics; a missing log directory is not an error", async () => {
    const r = await turnguard(["run", "--verbose", "--", "sh", "-c", "true"], {
      env: env(),
    });
    expect(r.code).toBe(0);
    // An empty turn says why it is empty and where turnguard looked.
    expect(r.stderr).toBe(
      "turnguard: empty: the agent exited 0 with no output; stderr was empty; profile sh " +
        "names no log files (a profile's `logs` lets turnguard read them)\n",
    );
    const agy = await turnguard(["run", "-v", "--agent", "agy", "--", "true"], { env: env() });
    expect(agy.code).toBe(0);
    expect(agy.stderr).toBe(
      `turnguard: log directory ${
        join(home, ".gemini/antigravity-cli/log")
      } does not exist (yet)\n` +
        "turnguard: empty: the agent exited 0 with no output; stderr was empty; no log file " +
        `grew during the turn (${join(home, ".gemini/antigravity-cli/log/cli-*.log")})\n`,
    );
  });

  test("turnguard schema prints the Outcome's JSON Schema", async () => {
    const r = await turnguard(["schema"]);
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout);
    expect(schema.type).toBe("object");
    expect(schema.required).toEqual([
      "v",
      "mode",
      "agent",
      "session",
      "turn",
      "startedAt",
      "endedAt",
      "durationMs",
      "status",
      "stopReason",
      "exit",
      "error",
      "retry",
      "reply",
      "publish",
      "diagnostics",
    ]);
    expect(schema.properties.status.enum).toEqual([
      "ok",
      "empty",
      "failed",
      "cancelled",
      "refused",
      "truncated",
    ]);
  });
});
