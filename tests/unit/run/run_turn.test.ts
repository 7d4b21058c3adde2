/**
 * `runTurn` in-process: a real agent process (`sh`), real pipes and log files, and the
 * facts it gathers reaching `decide` — without the CLI around it.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import type { Profile } from "../../../lib/config/config.ts";
import { loadRegistry, profileClassifier, requireProfile } from "../../../lib/config/registry.ts";
import { EXIT } from "../../../lib/errors.ts";
import type { Classifier } from "../../../lib/cause/classifier.ts";
import { runTurn } from "../../../lib/run/run.ts";

const QUOTA =
  "E0707 08:34:23.910604  84 log.go:398] agent executor error: model unreachable: RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s.";

let classifier: Classifier;
let dir: string;
let profile: Profile;

beforeAll(async () => {
  const registry = await loadRegistry({ env: {}, cwd: "/" });
  classifier = profileClassifier(registry, requireProfile(registry, "agy"));
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-runturn-"));
  mkdirSync(join(dir, "log"));
  profile = {
    name: "agy",
    match: ["agy"],
    logs: [join(dir, "log", "cli-*.log")],
    logFormat: "plain",
    anchors: null,
  };
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `sh -c script` as the agent; returns the result and what reached each stream. */
async function turn(script: string, timeoutMs: number | null = null, command = "sh") {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (c: Buffer) => out.push(c));
  stderr.on("data", (c: Buffer) => err.push(c));
  const result = await runTurn({
    command,
    args: ["-c", script],
    profile,
    classifier,
    env: { ...process.env, LOGDIR: join(dir, "log") },
    captureStdout: false,
    stdout,
    stderr,
    timeoutMs,
  });
  return {
    ...result,
    out: Buffer.concat(out).toString(),
    err: Buffer.concat(err).toString(),
  };
}

describe("runTurn", () => {
  test("an answer passes through byte for byte and reads ok", async () => {
    const r = await turn("printf 'hello\\nworld'");
    expect(r.out).toBe("hello\nworld");
    expect(r.outcome.status).toBe("ok");
    expect(r.outcome.error).toBeNull();
    expect(r.outcome.reply.text).toBe("hello\nworld");
    expect(r.exitCode).toBe(0);
  });

  test("exit 0, no output, the cause only in the log: failed with the log's cause", async () => {
    writeFileSync(join(dir, "log", "cli-1.log"), "I0707 start\n");
    const r = await turn(`echo '${QUOTA}' >> "$LOGDIR/cli-1.log"`);
    expect(r.out).toBe("");
    expect(r.outcome.status).toBe("failed");
    expect(r.outcome.error?.category).toBe("quota");
    expect(r.outcome.error?.message).toContain("Individual quota reached");
    expect(r.outcome.retry).not.toBeNull();
    expect(r.swallowed).toBe(true);
    expect(r.exitCode).toBe(EXIT.failed);
  });

  test("an error logged before the turn is not this turn's", async () => {
    writeFileSync(join(dir, "log", "cli-1.log"), QUOTA + "\n");
    const r = await turn("true");
    expect(r.outcome.status).toBe("empty");
    expect(r.outcome.error).toBeNull();
    expect(r.exitCode).toBe(0);
  });

  test("a non-zero exit is failed with its stderr, and keeps the agent's code", async () => {
    const r = await turn("echo 'Error: 503 Service Unavailable' >&2; exit 3");
    expect(r.err).toBe("Error: 503 Service Unavailable\n");
    expect(r.outcome.status).toBe("failed");
    expect(r.outcome.exit?.code).toBe(3);
    expect(r.outcome.error?.message).toContain("503 Service Unavailable");
    expect(r.exitCode).toBe(3);
  });

  test("--timeout stops the agent: failed, timeout, exit 124", async () => {
    const r = await turn("sleep 30", 200);
    expect(r.outcome.status).toBe("failed");
    expect(r.outcome.error?.category).toBe("timeout");
    expect(r.exitCode).toBe(EXIT.timeout);
  });

  test("an agent that cannot start: failed, 127", async () => {
    const r = await turn("", null, join(dir, "no-such-agent"));
    expect(r.outcome.status).toBe("failed");
    expect(r.exitCode).toBe(127);
  });
});
