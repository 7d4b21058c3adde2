/**
 * The command line's conventions: `--help` for every subcommand, `-V`, completions, usage
 * errors that suggest the flag meant, the wrapper exit codes of env/timeout/nice (125, 126,
 * 127, 124), `run --timeout`, and a proxy whose agent cannot start answering the client.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { closestName, FLAG_VALUES } from "../../lib/cli/args.ts";
import { COMMAND_HELP } from "../../lib/cli/command_help.ts";
import { RUN_OPTIONS } from "../../lib/cli/run.ts";
import { PROXY_OPTIONS } from "../../lib/cli/proxy.ts";
import { WAIT_OPTIONS } from "../../lib/cli/wait.ts";
import { LOG_OPTIONS } from "../../lib/cli/log.ts";
import { RETRY_OPTIONS } from "../../lib/cli/retry.ts";
import { SCAN_OPTIONS } from "../../lib/cli/scan.ts";
import { REPLAY_OPTIONS } from "../../lib/cli/replay.ts";
import { CHECK_OPTIONS } from "../../lib/cli/check.ts";
import { answerUnstarted, unstartedAnswers } from "../../lib/proxy/unstarted.ts";
import { nodeSource } from "../../lib/proxy/agent_io.ts";
import { BUN, homeEnv, MAIN, ROOT, turnguard } from "../helpers/cli.ts";

setDefaultTimeout(30_000);

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-cli-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));
const env = (extra: Record<string, string | undefined> = {}) => homeEnv(home, extra);

/** The real options table of every subcommand that has flags. */
const TABLES: Record<string, object> = {
  run: RUN_OPTIONS,
  proxy: PROXY_OPTIONS,
  wait: WAIT_OPTIONS,
  log: LOG_OPTIONS,
  retry: RETRY_OPTIONS,
  scan: SCAN_OPTIONS,
  explain: SCAN_OPTIONS,
  check: CHECK_OPTIONS,
  replay: REPLAY_OPTIONS,
  schema: {},
  types: {},
  completions: {},
};

describe("--help", () => {
  test("every subcommand's help lists exactly its real flags", () => {
    expect(Object.keys(COMMAND_HELP).sort()).toEqual(Object.keys(TABLES).sort());
    for (const [name, table] of Object.entries(TABLES)) {
      expect({ name, flags: Object.keys(COMMAND_HELP[name].flags).sort() }).toEqual({
        name,
        flags: Object.keys(table).sort(),
      });
    }
  });

  for (const name of Object.keys(COMMAND_HELP)) {
    for (const flag of ["--help", "-h"]) {
      test(`${name} ${flag}: usage, flags, exit codes, an example; exit 0`, async () => {
        const r = await turnguard([name, flag], { env: env() });
        expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
        expect(r.stdout).toStartWith(`turnguard ${name}: `);
        for (const part of ["Usage: turnguard", "Options:", "Exit codes:"]) {
          expect(r.stdout).toContain(part);
        }
        expect(r.stdout).toMatch(/\nExamples?:\n {2}/);
        for (const f of Object.keys(COMMAND_HELP[name].flags)) {
          const value = FLAG_VALUES[f] === undefined ? "" : ` ${FLAG_VALUES[f]}`;
          expect(r.stdout).toMatch(new RegExp(`\\n {2}--${f}${value} +\\S`));
        }
      });
    }
  }

  test("a value placeholder for every flag that takes a value, none for the others", () => {
    const strings = new Set<string>();
    for (const table of Object.values(TABLES)) {
      for (const [flag, spec] of Object.entries(table as Record<string, { type: string }>)) {
        expect({ flag, boolean: spec.type === "boolean" && flag in FLAG_VALUES }).toEqual({
          flag,
          boolean: false,
        });
        if (spec.type === "string") strings.add(flag);
      }
    }
    expect(Object.keys(FLAG_VALUES).sort()).toEqual([...strings].sort());
  });

  test("each command lists its own exit codes: run's 124 is not proxy's", async () => {
    const run = (await turnguard(["run", "--help"])).stdout;
    const proxy = (await turnguard(["proxy", "--help"])).stdout;
    expect(run).toContain("\n  124  --timeout expired");
    expect(run).toContain("\n  1    turnguard surfaced a failure the agent swallowed");
    const codes = (text: string) =>
      [...text.split("Exit codes:")[1].split("Example")[0].matchAll(/^ {2}(\d+) /gm)].map((m) =>
        m[1]
      );
    expect(codes(run)).toEqual(["0", "1", "124", "125", "126", "127"]);
    expect(codes(proxy)).toEqual(["125", "126", "127"]);
  });

  test("turnguard help CMD is CMD --help", async () => {
    const r = await turnguard(["help", "proxy"]);
    expect([r.code, r.stdout]).toEqual([0, (await turnguard(["proxy", "--help"])).stdout]);
  });

  test("run's --help after the agent command belongs to the agent", async () => {
    const r = await turnguard(["run", "--", "sh", "-c", 'echo "agent got $1"', "sh", "--help"], {
      env: env(),
    });
    expect([r.code, r.stdout]).toEqual([0, "agent got --help\n"]);
  });

  test("-V and --version print the version from package.json and a commit", async () => {
    const { version } = await import("../../package.json");
    for (const flag of ["-V", "--version"]) {
      const r = await turnguard([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(
        new RegExp(`^turnguard ${version.replaceAll(".", "\\.")} \\(source( [0-9a-f]+)?\\)\\n$`),
      );
    }
  });
});

describe("usage errors name the flag and suggest the closest", () => {
  test("closestName", () => {
    expect(closestName("outcome-jsn", Object.keys(RUN_OPTIONS))).toBe("outcome-json");
    expect(closestName("verbos", Object.keys(RUN_OPTIONS))).toBe("verbose");
    expect(closestName("turn", Object.keys(PROXY_OPTIONS))).toBe("turn-timeout");
    expect(closestName("zzzzzz", Object.keys(RUN_OPTIONS))).toBeNull();
  });
  test("run: an unknown flag is 125 with a suggestion", async () => {
    const r = await turnguard(["run", "--outcome-jsn", "--", "true"], { env: env() });
    expect([r.code, r.stderr]).toEqual([
      125,
      "turnguard: run: Unknown option '--outcome-jsn' (did you mean --outcome-json?)\n",
    ]);
  });
  test("an unknown subcommand suggests one", async () => {
    const r = await turnguard(["prxy"], { env: env() });
    expect([r.code, r.stderr]).toEqual([
      2,
      'turnguard: unknown command "prxy"; did you mean proxy? (see turnguard --help)\n',
    ]);
  });
  test("a flag without its value says so in one line, with the usage exit code", async () => {
    const cases = [
      [["wait", "--journal"], 2, "wait: --journal needs a value (PATH)"],
      // followed by another flag (node:util: "argument is ambiguous")
      [["log", "--journal", "--json"], 2, "log: --journal needs a value (PATH)"],
      [["log", "-n"], 2, "log: --limit needs a value (N)"],
      [["log", "-n", "--json"], 2, "log: --limit needs a value (N)"],
      [["run", "--timeout"], 125, "run: --timeout needs a value (S)"],
      [["proxy", "--var"], 125, "proxy: --var needs a value (NAME=VALUE)"],
    ] as const;
    for (const [args, code, message] of cases) {
      const r = await turnguard([...args], { env: env() });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({
        args,
        code,
        stderr: `turnguard: ${message}\n`,
      });
    }
  });
  test("the other commands keep exit 2 for usage errors", async () => {
    const r = await turnguard(["wait", "--jsno"], { env: env() });
    expect([r.code, r.stderr]).toEqual([
      2,
      "turnguard: wait: Unknown option '--jsno' (did you mean --json?)\n",
    ]);
  });
});

describe("completions", () => {
  test("bash: the script sources and completes subcommands and flags", () => {
    const script = join(home, "turnguard.bash");
    const r = spawnSync(BUN, [MAIN, "completions", "bash"], { encoding: "utf8" });
    expect(r.status).toBe(0);
    writeFileSync(script, r.stdout);
    const complete = (words: string[]) => {
      const probe = `source ${JSON.stringify(script)}
COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(" ")}); COMP_CWORD=${words.length - 1}
_turnguard; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const b = spawnSync("bash", ["--norc", "--noprofile", "-c", probe], { encoding: "utf8" });
      expect(b.stderr).toBe("");
      return b.stdout.trim().split("\n");
    };
    expect(complete(["turnguard", "pr"])).toEqual(["proxy"]);
    expect(complete(["turnguard", ""])).toContain("completions");
    expect(complete(["turnguard", "run", "--time"])).toEqual(["--timeout"]);
    expect(complete(["turnguard", "proxy", "--turn"])).toEqual(["--turn-timeout"]);
    expect(complete(["turnguard", "completions", "z"])).toEqual(["zsh"]);
  });
  test("zsh and fish scripts are printed; an unknown shell is a usage error", async () => {
    const zsh = await turnguard(["completions", "zsh"]);
    expect(zsh.stdout).toStartWith("#compdef turnguard\n");
    const fish = await turnguard(["completions", "fish"]);
    expect(fish.stdout).toContain(
      'complete -c turnguard -n "__fish_seen_subcommand_from run" -l timeout -r\n',
    );
    expect(fish.stdout).toContain(
      'complete -c turnguard -n "__fish_seen_subcommand_from run" -l verbose\n',
    );
    if (spawnSync("fish", ["--version"]).status === 0) {
      const f = join(home, "tg.fish");
      writeFileSync(f, fish.stdout);
      expect(spawnSync("fish", ["-n", f]).status).toBe(0);
    }
    const bad = await turnguard(["completions", "tcsh"]);
    expect([bad.code, bad.stderr]).toEqual([
      2,
      'turnguard: completions: expected one shell (bash, zsh, fish), got "tcsh"\n',
    ]);
  });
});

describe("no color codes", () => {
  test("turnguard's own output carries no escape codes, even when asked to color", async () => {
    const colorEnv = env({ FORCE_COLOR: "1", CLICOLOR_FORCE: "1", TERM: "xterm-256color" });
    for (
      const args of [
        ["--help"],
        ["run", "--help"],
        ["check"],
        ["check", "--verbose"],
        ["log"],
        ["explain", "HTTP 429 Too Many Requests"],
        ["run", "--", "no-such-agent-anywhere"],
        ["run", "--bogus"],
      ]
    ) {
      const r = await turnguard(args, { env: colorEnv });
      expect({ args, escapes: (r.stdout + r.stderr).includes("\x1b") }).toEqual({
        args,
        escapes: false,
      });
    }
  });
  test("make demo, not on a terminal, prints no raw ANSI escapes", () => {
    const r = spawnSync("make", ["-s", "demo"], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: undefined } as NodeJS.ProcessEnv,
    });
    expect(r.stdout).toContain("$ turnguard run -- agy");
    expect(r.stdout + r.stderr).not.toContain("\x1b");
  }, 120_000);
});

describe("run: the wrapper exit codes", () => {
  test("a file without the execute bit found on PATH is 126, named as such", async () => {
    const bin = join(home, "bin-noexec");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "myagent"), "#!/bin/sh\necho hi\n", { mode: 0o644 });
    chmodSync(join(bin, "myagent"), 0o644);
    const r = await turnguard(["run", "--", "myagent"], {
      env: env({ PATH: `${bin}:${process.env.PATH}` }),
    });
    expect(r.code).toBe(126);
    expect(r.stderr).toBe(
      `turnguard: myagent failed (crash): myagent: cannot execute: ${
        join(bin, "myagent")
      } is not executable (permission denied)\n`,
    );
  });
  test("a missing #! interpreter is named as such, 126", async () => {
    const script = join(home, "pyagent");
    writeFileSync(script, "#!/nonexistent/python\nprint(1)\n", { mode: 0o755 });
    const r = await turnguard(["run", "--", script], { env: env() });
    expect(r.code).toBe(126);
    expect(r.stderr).toContain(
      `cannot execute: its interpreter /nonexistent/python (named by #! in ${script}) was not found`,
    );
  });
  test("not found is 127", async () => {
    const r = await turnguard(["run", "--", "no-such-agent-anywhere"], { env: env() });
    expect(r.code).toBe(127);
  });
  test("--timeout: SIGTERM, status failed, category timeout, exit 124", async () => {
    const r = await turnguard(["run", "--timeout", "0.5", "--outcome-json", "--", "sleep", "60"], {
      env: env(),
    });
    expect(r.code).toBe(124);
    const o = JSON.parse(r.stdout);
    expect([o.status, o.error.category, o.exit.signal]).toEqual(["failed", "timeout", "SIGTERM"]);
    expect(o.error.message).toBe("turn timed out: stopped after 500ms (--timeout)");
  });
  test("--timeout: an agent that ignores SIGTERM is killed after the grace", async () => {
    const r = await turnguard([
      "run",
      "--timeout",
      "0.2",
      "--outcome-json",
      "--",
      "sh",
      "-c",
      "trap '' TERM; sleep 60 & wait; sleep 60",
    ], { env: env() });
    expect(r.code).toBe(124);
    expect(JSON.parse(r.stdout).exit.signal).toBe("SIGKILL");
  });
  test("a turn that ends before --timeout is untouched", async () => {
    const r = await turnguard(["run", "--timeout", "30", "--", "echo", "done"], { env: env() });
    expect([r.code, r.stdout]).toEqual([0, "done\n"]);
  });
  test("--timeout 0 or a word is a usage error (125)", async () => {
    for (const value of ["0", "soon"]) {
      const r = await turnguard(["run", "--timeout", value, "--", "true"], { env: env() });
      expect(r.code).toBe(125);
      expect(r.stderr).toStartWith("turnguard: --timeout: ");
    }
  });
});

describe("proxy: an agent that cannot start answers the client instead of a blank turn", () => {
  test("unstartedAnswers: every request of the lines, never a notification", () => {
    const enc = (m: unknown) => new TextEncoder().encode(JSON.stringify(m));
    const answers = unstartedAnswers(
      [
        enc({ jsonrpc: "2.0", id: 0, method: "initialize", params: {} }),
        enc({ jsonrpc: "2.0", method: "session/cancel", params: {} }),
        enc([{ jsonrpc: "2.0", id: "a", method: "x" }]),
        new TextEncoder().encode("not json"),
      ],
      "why",
      127,
    ).map((b) => JSON.parse(new TextDecoder().decode(b)));
    expect(answers.map((a) => [a.id, a.error.code, a.error.message])).toEqual([
      [0, -32603, "why"],
      ["a", -32603, "why"],
    ]);
    expect(answers[0].error.data.turnguard.category).toBe("crash");
  });

  const cases = [
    ["not found", () => join(home, "no-such-agent"), 127, "command not found"],
    [
      "not executable",
      () => {
        const f = join(home, "noexec-agent");
        writeFileSync(f, "#!/bin/sh\n", { mode: 0o644 });
        chmodSync(f, 0o644);
        return f;
      },
      126,
      "is not executable (permission denied)",
    ],
    [
      "missing interpreter",
      () => {
        const f = join(home, "py-agent");
        writeFileSync(f, "#!/nonexistent/python\n", { mode: 0o755 });
        return f;
      },
      126,
      "its interpreter /nonexistent/python",
    ],
  ] as const;
  for (const [name, make, code, reason] of cases) {
    test(`${name}: the SDK client's initialize gets the reason; exit ${code}`, async () => {
      const command = make();
      const child = spawn(BUN, [MAIN, "proxy", "--", command], {
        env: { ...process.env, ...env() } as NodeJS.ProcessEnv,
        stdio: ["pipe", "pipe", "pipe"],
      });
      const exited = new Promise<number | null>((r) => child.once("close", (c) => r(c)));
      const app = acp.client({ name: "test-client" });
      const stream = acp.ndJsonStream(
        Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
      );
      const error = await app.connectWith(stream, async (ctx) => {
        try {
          await ctx.request("initialize", {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: {},
          });
          return null;
        } catch (err) {
          return err as { code: number; message: string };
        }
      }).finally(() => child.stdin!.end());
      expect(error?.code).toBe(-32603);
      expect(error?.message).toStartWith(
        `turnguard: the agent could not be started: ${command}: `,
      );
      expect(error?.message).toContain(reason);
      expect(await exited).toBe(code);
    });
  }

  test("a client that sends nothing is waited for a bounded time only", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const written: Buffer[] = [];
    output.on("data", (c: Buffer) => written.push(c));
    await answerUnstarted({
      input: nodeSource(input),
      output,
      message: "why",
      exitCode: 127,
      waitMs: 50,
    });
    expect(Buffer.concat(written).length).toBe(0);
    // A request sent in pieces, with a notification and a second request before it ends.
    const input2 = new PassThrough();
    const done = answerUnstarted({
      input: nodeSource(input2),
      output,
      message: "why",
      exitCode: 127,
    });
    input2.write('{"jsonrpc":"2.0","method":"x"}\n{"jsonrpc":"2.0","id":7,');
    input2.write('"method":"initialize"}\r\n{"jsonrpc":"2.0","id":8,"method":"y"}\n');
    await done;
    const ids = Buffer.concat(written).toString().trim().split("\n").map((l) => JSON.parse(l).id);
    expect(ids).toEqual([7, 8]);
  });

  test("a client that closes its input at once: exit at EOF", () => {
    const r = spawnSync(BUN, [MAIN, "proxy", "--", join(home, "no-such-agent")], {
      env: { ...process.env, ...env() },
      input: "",
      encoding: "utf8",
    });
    expect([r.status, r.stdout]).toEqual([127, ""]);
  });
});
