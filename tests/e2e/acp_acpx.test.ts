/**
 * A real ACP client CLI in front of turnguard: `acpx --agent "turnguard proxy -- <fake
 * agent>" exec "hi"`. The agent swallows a quota failure (empty end_turn, cause only in its
 * log); acpx must print the cause turnguard surfaced and exit non-zero.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { AGENT, BUN, MAIN, ROOT, type Scratch, scratch, testEnv } from "../fixtures/acp/harness.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(30_000);

const ACPX = join(ROOT, "node_modules/.bin/acpx");

function acpx(s: Scratch, args: string[], env: Record<string, string>) {
  const agent = [BUN, MAIN, "proxy", "--config", s.config, "--agent", "fake", "--", BUN, AGENT]
    .join(" ");
  const child = spawn(ACPX, ["--agent", agent, ...args], {
    env: testEnv(s, env),
    cwd: s.dir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Uint8Array) => stdout += new TextDecoder().decode(c));
  child.stderr.on("data", (c: Uint8Array) => stderr += new TextDecoder().decode(c));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  );
}

const CAUSE =
  "agent executor error: RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s.";

describe("acpx through turnguard proxy", () => {
  test("a swallowed quota failure is printed and acpx exits non-zero", async () => {
    const s = scratch();
    const r = await acpx(s, ["exec", "hi"], { FAKE_SCENARIO: "log-quota" });
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain(`[error] RUNTIME: ${CAUSE}`);
  }, 30_000);

  test("its JSON output shows the rewritten response with turnguard's reading", async () => {
    const s = scratch();
    const r = await acpx(s, ["--format", "json", "exec", "hi"], { FAKE_SCENARIO: "log-quota" });
    expect(r.code).toBe(1);
    const messages = r.stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    const answer = messages.find((m) => m.id === 2 && m.method === undefined);
    expect(answer).toMatchObject({
      jsonrpc: "2.0",
      id: 2,
      error: {
        code: -32603,
        message: CAUSE,
        data: {
          turnguard: {
            status: "failed",
            category: "quota",
            code: 429,
            anchor: "fake.executor",
            stopReason: "end_turn",
            retry: { retryable: true, afterMs: 147_166_000 },
          },
        },
      },
    });
  }, 30_000);

  test("a healthy turn prints the agent's answer and exits 0", async () => {
    const s = scratch();
    const r = await acpx(s, ["exec", "hi"], { FAKE_SCENARIO: "echo hello through turnguard" });
    expect([r.code, r.stdout.includes("hello through turnguard")]).toEqual([0, true]);
  }, 30_000);
});
