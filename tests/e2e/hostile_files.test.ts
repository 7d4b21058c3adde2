/**
 * The files turnguard writes and the places it reads config from, made hostile: FIFOs,
 * directories and symbolic links at every path it writes; relative and empty HOME/XDG;
 * secrets in the agent's output, logs and errors; file modes. The compiled binary, as
 * users meet it (the proxy through `bun main.ts`, as its harness runs it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { journalPath } from "../../lib/journal/files.ts";
import { userConfigPath } from "../../lib/config/config.ts";
import { dirVarProblems, homeDir } from "../../lib/io/env_dirs.ts";
import { ensureBinary } from "../helpers/binary.ts";
import { type Finished, homeEnv, runProcess } from "../helpers/cli.ts";
import {
  AGENT,
  BUN,
  fakeArgs,
  killedAfterEach,
  openSession,
  prompt,
  readOutcomes,
  type Scratch,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

const track = killedAfterEach();
let binary: string;
let root: string;
let n = 0;

/** A fresh directory for one test. */
function fresh(): string {
  const dir = join(root, String(n++));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Runs the binary with `env`, killed after a generous bound: a turnguard blocked on a FIFO
 * shows up as a SIGKILL instead of hanging the suite.
 */
function tg(
  args: string[],
  env: Record<string, string | undefined>,
  cwd = root,
): Promise<Finished> {
  return runProcess([binary, ...args], {
    env,
    cwd,
    onSpawn: (child) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      child.once("close", () => clearTimeout(timer));
    },
  });
}

const OK_AGENT = ["sh", "-c", "echo hi there"];

/** turnguard's own stderr lines. */
const ownLines = (r: Finished) => r.stderr.split("\n").filter((l) => l.startsWith("turnguard:"));

beforeAll(() => {
  binary = ensureBinary();
  root = mkdtempSync(join(tmpdir(), "tg-hostile-files-"));
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Non-regular things to plant at a path, each with the words turnguard uses for it. */
const PLANTS: [string, (path: string, dir: string) => void, string][] = [
  ["a FIFO", (p) => execFileSync("mkfifo", [p]), "is a FIFO, not a regular file"],
  ["a directory", (p) => mkdirSync(p), "is a directory, not a regular file"],
  [
    "a symbolic link",
    (p, dir) => {
      writeFileSync(join(dir, "target"), "precious\n");
      symlinkSync(join(dir, "target"), p);
    },
    "a symbolic link",
  ],
  [
    "a dangling symbolic link",
    (p, dir) => symlinkSync(join(dir, "elsewhere"), p),
    "a symbolic link",
  ],
  // A file someone else planted in a shared directory: they would read every turn and
  // forge records. Handing a file to another user takes root.
  ...(process.getuid?.() === 0
    ? [[
      "a file another user owns",
      (p: string) => {
        writeFileSync(p, "planted\n", { mode: 0o666 });
        chownSync(p, 65534, 65534);
      },
      "is owned by uid 65534, not by this user",
    ] as [string, (path: string, dir: string) => void, string]]
    : []),
];

describe("non-regular files where turnguard writes: refused, one line, the turn goes on", () => {
  for (const [what, plant, words] of PLANTS) {
    test(`${what} as the journal`, async () => {
      const dir = fresh();
      const path = join(dir, "journal.jsonl");
      plant(path, dir);
      const r = await tg(["run", "--", ...OK_AGENT], homeEnv(dir, { TURNGUARD_JOURNAL: path }));
      expect(r.signal).toBe(null);
      expect([r.code, r.stdout]).toEqual([0, "hi there\n"]);
      const lines = ownLines(r);
      expect(lines.length).toBe(1);
      expect(lines[0]).toContain(path);
      expect(lines[0]).toContain(words);
      if (existsSync(join(dir, "target"))) {
        expect(readFileSync(join(dir, "target"), "utf8")).toBe("precious\n");
      }
      expect(existsSync(join(dir, "elsewhere"))).toBe(false);
      if (words.includes("owned")) expect(readFileSync(path, "utf8")).toBe("planted\n");
    });

    test(`${what} as --outcome-file`, async () => {
      const dir = fresh();
      const path = join(dir, "outcomes.jsonl");
      plant(path, dir);
      const r = await tg(
        ["run", "--no-journal", "--outcome-file", path, "--", ...OK_AGENT],
        homeEnv(dir),
      );
      expect(r.signal).toBe(null);
      expect([r.code, r.stdout]).toEqual([0, "hi there\n"]);
      const lines = ownLines(r);
      expect(lines.length).toBe(1);
      expect(lines[0]).toContain(`--outcome-file ${path}`);
      expect(lines[0]).toContain(words);
      if (existsSync(join(dir, "target"))) {
        expect(readFileSync(join(dir, "target"), "utf8")).toBe("precious\n");
      }
      expect(existsSync(join(dir, "elsewhere"))).toBe(false);
      if (words.includes("owned")) expect(readFileSync(path, "utf8")).toBe("planted\n");
    });
  }

  test("the proxy: FIFOs as journal and outcome file do not block the turn", async () => {
    const s = scratch();
    const journal = join(s.dir, "journal.fifo");
    const outcomes = join(s.dir, "outcomes.fifo");
    execFileSync("mkfifo", [journal]);
    execFileSync("mkfifo", [outcomes]);
    const args = fakeArgs(s, ["--journal", journal]).map((a) => a === s.outcomes ? outcomes : a);
    const p = track(startProxy(s, args));
    const timer = setTimeout(() => p.child.kill("SIGKILL"), 30_000);
    try {
      const response = await withClient(p, async (ctx) => {
        const sessionId = await openSession(ctx);
        return await prompt(ctx, sessionId, "echo the answer");
      });
      expect(response.stopReason).toBe("end_turn");
      expect(await p.exited).toEqual({ code: 0, signal: null });
    } finally {
      clearTimeout(timer);
    }
    const lines = p.stderr().split("\n").filter((l) => l.startsWith("turnguard:"));
    expect(lines).toEqual([
      `turnguard: journal ${journal} is a FIFO, not a regular file; turns are not journaled`,
      `turnguard: --outcome-file ${outcomes} is a FIFO, not a regular file; no Outcome is written to it`,
    ]);
    rmSync(s.dir, { recursive: true, force: true });
  }, 60_000);
});

describe("the journal's readers refuse a FIFO instead of hanging", () => {
  for (
    const command of [["wait"], ["wait", "--print"], ["log"], ["log", "--json"], ["retry", "x"]]
  ) {
    test(command.join(" "), async () => {
      const dir = fresh();
      const path = join(dir, "journal.jsonl");
      execFileSync("mkfifo", [path]);
      const r = await tg([...command, "--journal", path], homeEnv(dir));
      expect(r.signal).toBe(null);
      expect(r.code).toBe(6);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`turnguard: journal ${path} is a FIFO, not a regular file\n`);
    });
  }
});

describe("file modes", () => {
  test("journal 0600 in a new directory 0700, outcome file 0600, whatever the umask", async () => {
    const dir = fresh();
    const state = join(dir, "state");
    const outcomes = join(dir, "outcomes.jsonl");
    const r = await runProcess([
      "sh",
      "-c",
      `umask 000; exec "$@"`,
      "tg",
      binary,
      "run",
      "--outcome-file",
      outcomes,
      "--",
      ...OK_AGENT,
    ], { env: homeEnv(dir, { XDG_STATE_HOME: state }) });
    expect(r.code).toBe(0);
    expect(statSync(join(state, "turnguard")).mode & 0o777).toBe(0o700);
    expect(statSync(join(state, "turnguard", "journal.jsonl")).mode & 0o777).toBe(0o600);
    expect(statSync(outcomes).mode & 0o777).toBe(0o600);
  });

  test("an existing journal is appended to as it is (its mode is the owner's choice)", async () => {
    const dir = fresh();
    const path = join(dir, "journal.jsonl");
    writeFileSync(path, "");
    chmodSync(path, 0o640);
    const r = await tg(["run", "--journal", path, "--", ...OK_AGENT], homeEnv(dir));
    expect(r.code).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(readFileSync(path, "utf8")).toContain('"turn_ended"');
  });
});

describe("the journal's off switch", () => {
  test("--no-journal and config journal = false write no journal", async () => {
    const dir = fresh();
    const env = homeEnv(dir);
    const journal = join(dir, ".state", "turnguard", "journal.jsonl");
    expect((await tg(["run", "--no-journal", "--", ...OK_AGENT], env)).code).toBe(0);
    expect(existsSync(journal)).toBe(false);
    const config = join(dir, "anchors.toml");
    writeFileSync(config, "journal = false\n");
    expect((await tg(["run", "--config", config, "--", ...OK_AGENT], env)).code).toBe(0);
    expect(existsSync(journal)).toBe(false);
    // An explicit --journal still journals under `journal = false`.
    const given = join(dir, "given.jsonl");
    expect((await tg(["run", "--config", config, "--journal", given, "--", ...OK_AGENT], env)).code)
      .toBe(0);
    expect(existsSync(given)).toBe(true);
    // The default journal was on all along: the switch is what turned it off.
    expect((await tg(["run", "--", ...OK_AGENT], env)).code).toBe(0);
    expect(existsSync(journal)).toBe(true);
  });

  test("--journal with --no-journal is a usage error (run's own: 125)", async () => {
    const dir = fresh();
    const r = await tg(
      ["run", "--journal", join(dir, "j"), "--no-journal", "--", ...OK_AGENT],
      homeEnv(dir),
    );
    expect(r.code).toBe(125);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("turnguard: --journal and --no-journal exclude each other\n");
  });
});

describe("relative and empty HOME / XDG: never config or code from the working directory", () => {
  /** A working directory holding a config whose plugin leaves a mark when loaded. */
  function plantedCwd(): { cwd: string; mark: string } {
    const cwd = fresh();
    const mark = join(cwd, "PLUGIN_RAN");
    for (const base of [".config", "cfg"]) {
      mkdirSync(join(cwd, base, "turnguard"), { recursive: true });
      writeFileSync(
        join(cwd, base, "turnguard", "anchors.toml"),
        `plugins = ["${join(cwd, "evil.ts")}"]\n`,
      );
    }
    writeFileSync(
      join(cwd, "evil.ts"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${
        JSON.stringify(mark)
      }, "ran");\nexport default { anchors: [] };\n`,
    );
    return { cwd, mark };
  }

  const CASES: [string, Record<string, string>, string[]][] = [
    ["HOME=.", { HOME: "." }, ['HOME="." is not an absolute path; it is ignored']],
    ["HOME=relative", { HOME: "sub/.." }, ['HOME="sub/.." is not an absolute path']],
    [
      "XDG_CONFIG_HOME=cfg",
      { XDG_CONFIG_HOME: "cfg", HOME: "." },
      ['XDG_CONFIG_HOME="cfg" is not an absolute path', 'HOME="." is not an absolute path'],
    ],
    ["empty HOME and XDG", { HOME: "", XDG_CONFIG_HOME: "" }, []],
  ];
  for (const [what, vars, says] of CASES) {
    test(what, async () => {
      const { cwd, mark } = plantedCwd();
      const state = join(cwd, "state-abs");
      const env = {
        ...homeEnv(cwd),
        XDG_CONFIG_HOME: undefined,
        XDG_STATE_HOME: state,
        ...vars,
      };
      const r = await tg(["run", "--", ...OK_AGENT], env, cwd);
      expect([r.code, r.stdout]).toEqual([0, "hi there\n"]);
      expect(existsSync(mark)).toBe(false);
      for (const s of says) expect(r.stderr).toContain(s);
      if (says.length === 0) expect(ownLines(r)).toEqual([]);
      const check = await tg(["check", "--json"], env, cwd);
      expect(check.stdout).not.toContain('anchors.toml",');
      expect(check.stdout).not.toContain(cwd + "/.config");
      expect(existsSync(mark)).toBe(false);
    });
  }

  test("a .env and a bunfig.toml in the working directory change nothing", async () => {
    // The runtime the binary is built with would read both at start: the .env's variables
    // would reach the agent (and TURNGUARD_CONFIG would load its plugin), the bunfig.toml's
    // preload would run in turnguard.
    const { cwd, mark } = plantedCwd();
    writeFileSync(
      join(cwd, ".env"),
      `PLANTED_VAR=from-dotenv\nTURNGUARD_CONFIG=${
        join(cwd, "cfg", "turnguard", "anchors.toml")
      }\n`,
    );
    writeFileSync(join(cwd, "bunfig.toml"), `preload = ["${join(cwd, "evil.ts")}"]\n`);
    const env = homeEnv(fresh()); // the working directory is not HOME
    const r = await tg(["run", "--", "sh", "-c", 'echo "[$PLANTED_VAR]"'], env, cwd);
    expect([r.code, r.stdout]).toEqual([0, "[]\n"]);
    expect(ownLines(r)).toEqual([]);
    expect(existsSync(mark)).toBe(false);
  });

  test("the journal's default place never resolves against the working directory", () => {
    const cwd = "/some/where";
    for (
      const env of [
        { HOME: "." },
        { HOME: ".", XDG_STATE_HOME: "state" },
        { HOME: "", XDG_STATE_HOME: "" },
      ]
    ) {
      const path = journalPath(undefined, env, cwd);
      expect(isAbsolute(path)).toBe(true);
      expect(path.startsWith(cwd)).toBe(false);
      expect(path.startsWith("./")).toBe(false);
    }
    expect(journalPath(undefined, { HOME: "/h" }, cwd)).toBe(
      "/h/.local/state/turnguard/journal.jsonl",
    );
    expect(homeDir({ HOME: "." }, () => null)).toBe(null);
    expect(userConfigPath(undefined, { HOME: "." }, cwd)).toBe(null);
    expect(userConfigPath(undefined, { XDG_CONFIG_HOME: "cfg" }, cwd)).toBe(null);
    expect(dirVarProblems({ HOME: ".", XDG_STATE_HOME: "", XDG_CONFIG_HOME: "/abs" })).toEqual([
      'HOME="." is not an absolute path; it is ignored',
    ]);
  });
});

describe("secrets never reach the journal, the outcome file or turnguard's stderr", () => {
  const KEY = "sk-ant-api03-" + "Zq7Xw2Lm9Pk4Rt6Yv1Hn8Bc3".repeat(4);
  const GKEY = "AIza" + "Zq7Xw2Lm9Pk4Rt6Yv1Hn8Bc3Df5Gj0Ks".slice(0, 35);
  const TOKEN = "ghp_" + "Zq7Xw2Lm9Pk4Rt6Yv1Hn8Bc3Df5Gj0Ks1234".slice(0, 36);
  let dir: string;
  let agy: string;

  beforeAll(() => {
    dir = fresh();
    const bin = join(dir, "bin");
    mkdirSync(bin);
    agy = join(bin, "agy");
    // An agy that swallows a quota failure whose cause quotes the key; it prints a token
    // on stdout first (ECHO=1) or nothing.
    writeFileSync(
      agy,
      `#!/bin/sh
dir="$HOME/.gemini/antigravity-cli/log"; mkdir -p "$dir"
[ -n "\${ECHO:-}" ] && echo "using ${TOKEN} and Authorization: Bearer ${KEY}"
printf 'E%s %5d log.go:398] agent executor error: model unreachable: RESOURCE_EXHAUSTED (code 429): quota for key ${GKEY} at https://x.test/v1?key=${GKEY}&alt=sse (api key ${KEY})\\n' "$(date +%m%d\\ %H:%M:%S.%6N)" "$$" >>"$dir/cli-1.log"
exit 0
`,
    );
    chmodSync(agy, 0o755);
  });

  function clean(text: string): void {
    for (const secret of [KEY, GKEY, TOKEN]) expect(text).not.toContain(secret);
  }

  test("a swallowed failure whose cause holds keys", async () => {
    const journal = join(dir, "journal.jsonl");
    const outcomes = join(dir, "outcomes.jsonl");
    const env = homeEnv(dir, { TURNGUARD_JOURNAL: journal });
    const r = await tg(
      ["run", "--outcome-json", "--outcome-file", outcomes, "-v", "--", agy, "--print", "hi"],
      env,
    );
    expect(r.code).toBe(1);
    const outcome = JSON.parse(r.stdout);
    expect(outcome.status).toBe("failed");
    expect(outcome.error.message).toContain("[REDACTED:");
    clean(r.stdout);
    clean(r.stderr);
    expect(ownLines(r).join("\n")).toContain("RESOURCE_EXHAUSTED");
    clean(readFileSync(journal, "utf8"));
    clean(readFileSync(outcomes, "utf8"));
    expect(readOutcomes(outcomes)[0].error?.message).toContain("[REDACTED:google]");
    for (const args of [["wait", "--print"], ["wait", "--json"], ["log"], ["log", "--json"]]) {
      const w = await tg(args, env);
      clean(w.stdout + w.stderr);
    }
  });

  test("keys the agent prints: the reply kept in the journal and the Outcome is redacted", async () => {
    const journal = join(dir, "journal2.jsonl");
    const env = homeEnv(dir, { TURNGUARD_JOURNAL: journal, ECHO: "1" });
    const r = await tg(["run", "--outcome-json", "--", agy, "--print", "hi"], env);
    const outcome = JSON.parse(r.stdout);
    expect(outcome.reply.text).toBe(
      "using [REDACTED:github] and Authorization: [REDACTED:header]\n",
    );
    clean(r.stdout + r.stderr);
    clean(readFileSync(journal, "utf8"));
    // Without --outcome-json, stdout is the agent's own, passed through byte for byte.
    const pass = await tg(["run", "--no-journal", "--", agy, "--print", "hi"], env);
    expect(pass.stdout).toContain(TOKEN);
    clean(pass.stderr);
  });

  test("a key split across the agent's writes is redacted whole", async () => {
    // Each stream gets the key in two writes 300 ms apart: two chunks for turnguard.
    const split = join(dir, "split.sh");
    const half = (k: string) => [k.slice(0, 20), k.slice(20)];
    const [k1, k2] = half(KEY);
    const [g1, g2] = half(GKEY);
    writeFileSync(
      split,
      `#!/bin/sh
printf 'error: 401 key ${k1}' >&2; sleep 0.3; printf '${k2} rejected\\n' >&2
printf 'reply with ${g1}'; sleep 0.3; printf '${g2}\\n'
exit 1
`,
    );
    chmodSync(split, 0o755);
    const journal = join(dir, "journal3.jsonl");
    const r = await tg(
      ["run", "--outcome-json", "--", split],
      homeEnv(dir, { TURNGUARD_JOURNAL: journal }),
    );
    const outcome = JSON.parse(r.stdout);
    expect(outcome.error.message).toBe("error: 401 key [REDACTED:anthropic] rejected");
    expect(outcome.reply.text).toBe("reply with [REDACTED:google]\n");
    clean(r.stdout);
    clean(readFileSync(journal, "utf8"));
  });
});

/**
 * The fake profile with session records under HOME/rec/<dir>/<session>.jsonl, read 200 ms
 * after the agent answers.
 */
function withRecords(s: Scratch): string {
  const config = readFileSync(s.config, "utf8").replace(
    'anchors = ["fake.*"]',
    `anchors = ["fake.*"]\nsession_records = ["${s.home}/rec/*/{session}.jsonl"]\nrecords_settle_ms = 200`,
  );
  writeFileSync(s.config, config);
  return join(s.home, "rec");
}

/** Whether this kernel lets this user take a write lease on a file it owns. */
function leasesWork(): boolean {
  const probe = join(tmpdir(), `tg-lease-probe-${process.pid}`);
  const r = spawnSync("python3", [
    "-c",
    "import fcntl,os,sys;fd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT);" +
    "fcntl.fcntl(fd,fcntl.F_SETLEASE,fcntl.F_WRLCK)",
    probe,
  ]);
  rmSync(probe, { force: true });
  return r.status === 0;
}

/**
 * An agent's helper that writes a record into `path` (a new session file of the turn) and
 * holds a write lease on it for `seconds`, deaf to the kernel's SIGIO: a blocking open(2)
 * of the file waits the kernel's lease-break time (/proc/sys/fs/lease-break-time, 45 s).
 */
function holdLease(path: string, seconds: number) {
  const child = spawn("python3", [
    "-c",
    [
      "import fcntl, os, signal, sys, time",
      "signal.signal(signal.SIGIO, signal.SIG_IGN)",
      "os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)",
      "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)",
      'os.write(fd, b\'{"sessionId":"sess-1","type":"user"}\\n\')',
      "fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)",
      "print('leased', flush=True)",
      "time.sleep(float(sys.argv[2]))",
    ].join("\n"),
    path,
    String(seconds),
  ], { stdio: ["ignore", "pipe", "inherit"] });
  const leased = new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the lease holder exited (${code})`)));
  });
  return { child, leased };
}

describe("agent-controlled files the proxy reads at a turn's end", () => {
  test.if(leasesWork())(
    "a session file held by a write lease: relaying goes on, the turn ends, one diagnostic",
    async () => {
      const s = scratch();
      const rec = withRecords(s);
      const leasedFile = join(rec, "z", "sess-1.jsonl");
      const p = track(startProxy(s, fakeArgs(s, ["--verbose"]), [BUN, AGENT], {}, [binary]));
      let holder: ReturnType<typeof holdLease> | undefined;
      try {
        const times = await withClient(p, async (ctx) => {
          const sessionId = await openSession(ctx);
          expect(sessionId).toBe("sess-1");
          // The turn starts (its records snapshotted: the verbose line says so), then the
          // agent's helper writes the session file and leases it before the turn ends.
          const first = prompt(ctx, sessionId, "slow 4000 first");
          while (!p.stderr().includes("turn 1: started")) {
            await new Promise((r) => setTimeout(r, 20));
          }
          holder = holdLease(leasedFile, 60);
          await holder.leased;
          const t0 = performance.now();
          expect(await first).toEqual({ stopReason: "end_turn" });
          const t1 = performance.now();
          expect(await prompt(ctx, sessionId, "echo second")).toEqual({ stopReason: "end_turn" });
          return [t1 - t0, performance.now() - t1];
        });
        await p.exited;
        // The lease holds for 60 s and the kernel breaks it after 45 s: blocked on it, the
        // proxy would answer neither prompt before that. Generous smoke bounds.
        expect(times[0]).toBeLessThan(15_000);
        expect(times[1]).toBeLessThan(15_000);
        const outcomes = readOutcomes(s.outcomes);
        expect(outcomes.map((o) => o.status)).toEqual(["ok", "ok"]);
        expect(outcomes[0].diagnostics.join("\n")).toContain(
          `${leasedFile} was not read: another process holds a lease on it (EWOULDBLOCK)`,
        );
      } finally {
        holder?.child.kill("SIGKILL");
      }
    },
    60_000,
  );

  const NOT_REGULAR: [string, (path: string) => void, string][] = [
    ["a FIFO", (p) => execFileSync("mkfifo", [p]), ""],
    [
      "a symbolic link to /dev/zero",
      (p) => symlinkSync("/dev/zero", p),
      "was not read: it is a symbolic link (not followed)",
    ],
    [
      "a symbolic link to another file",
      (p) => {
        writeFileSync(p + ".target", JSON.stringify({ sessionId: "sess-1", secret: 1 }) + "\n");
        symlinkSync(p + ".target", p);
      },
      "was not read: it is a symbolic link (not followed)",
    ],
  ];
  for (const [what, plant, words] of NOT_REGULAR) {
    test(`${what} as the session file: the turn ends ok, nothing is read from it`, async () => {
      const s = scratch();
      const rec = withRecords(s);
      mkdirSync(join(rec, "a"), { recursive: true });
      const p = track(startProxy(s, fakeArgs(s), [BUN, AGENT], {}, [binary]));
      const answers = await withClient(p, async (ctx) => {
        const sessionId = await openSession(ctx);
        const first = prompt(ctx, sessionId, "slow 600 hello");
        await new Promise((r) => setTimeout(r, 200));
        plant(join(rec, "a", `${sessionId}.jsonl`));
        return [await first, await prompt(ctx, sessionId, "echo again")];
      });
      expect(answers).toEqual([{ stopReason: "end_turn" }, { stopReason: "end_turn" }]);
      await p.exited;
      const outcomes = readOutcomes(s.outcomes);
      expect(outcomes.map((o) => o.status)).toEqual(["ok", "ok"]);
      if (words) expect(outcomes[0].diagnostics.join("\n")).toContain(words);
    }, 30_000);
  }
});

describe("scan and explain inputs an agent controls", () => {
  test("a FIFO, a device or a symbolic link is a one-line error at once, never a hang", async () => {
    const dir = fresh();
    const fifo = join(dir, "agent.log");
    execFileSync("mkfifo", [fifo]);
    symlinkSync("/etc/passwd", join(dir, "link.log"));
    for (
      const [input, words] of [
        [fifo, "it is a FIFO"],
        ["/dev/zero", "it is a character device"],
        [join(dir, "link.log"), "it is a symbolic link (not followed)"],
      ]
    ) {
      const r = await tg(["scan", input], homeEnv(dir));
      expect([r.signal, r.code, r.stdout]).toEqual([null, 2, ""]);
      expect(r.stderr).toBe(`turnguard: scan: cannot read ${input}: ${words}\n`);
    }
  });
});

describe("a code plugin's own output never reaches the ACP wire", () => {
  test(
    "console.log and process.stdout.write in a plugin: shown on stderr, redacted and escaped; stdout stays JSON-RPC",
    async () => {
      const s = scratch();
      const key = "sk-ant-api03-" + "k".repeat(24);
      writeFileSync(
        join(s.dir, "chatty.ts"),
        `console.log("hello from the plugin ${key} \\x1b]0;pwned\\x07");\n` +
          `process.stdout.write("{not json\\n");\n` +
          `export default { anchors: [{ id: "chatty.any", on: ["log"], match() { return null; } }] };\n`,
      );
      writeFileSync(s.config, `plugins = ["chatty.ts"]\n` + readFileSync(s.config, "utf8"));
      const p = track(startProxy(s, fakeArgs(s), [BUN, AGENT], {}, [binary]));
      let out = "";
      p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
      p.child.stdin!.write(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: 1, clientCapabilities: {} },
        }) + "\n",
      );
      for (let i = 0; i < 500 && !out.includes('"id":1'); i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      // The plugin loaded and printed before the answer: give its messages time to arrive.
      await new Promise((r) => setTimeout(r, 300));
      p.child.stdin!.end();
      await p.exited;
      const lines = out.split("\n").filter((l) => l !== "");
      expect(lines.length).toBe(1);
      expect(JSON.parse(lines[0])).toMatchObject({ jsonrpc: "2.0", id: 1 });
      const err = p.stderr();
      expect(err).toContain(`turnguard: plugin ${join(s.dir, "chatty.ts")}: hello from the plugin`);
      expect(err).toContain(`turnguard: plugin ${join(s.dir, "chatty.ts")}: {not json`);
      expect(err).not.toContain(key);
      expect(err).not.toContain("\x1b");
    },
    30_000,
  );
});
