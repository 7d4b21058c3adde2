/**
 * lib/agent/descendants.ts: a process that left its parent's process group and session
 * (`setsid`) is found by the token its environment inherited, and only it.
 */
import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  markedEnv,
  markedProcesses,
  newAgentToken,
  signalMarked,
} from "../../../lib/agent/descendants.ts";

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("markedProcesses", () => {
  test("finds a setsid daemon by its inherited token; another token finds nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-marked-"));
    const pidFile = join(dir, "daemon.pid");
    const token = newAgentToken();
    const env = markedEnv({ PATH: process.env.PATH }, token);
    const agent = spawn(
      "sh",
      [
        "-c",
        `setsid sh -c 'echo $$ > "$0"; exec sleep 100' "$0" </dev/null >/dev/null 2>&1 &`,
        pidFile,
      ],
      { env: env as NodeJS.ProcessEnv, stdio: "ignore" },
    );
    await new Promise((r) => agent.once("exit", r));
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "");
    const pid = Number(readFileSync(pidFile, "utf8"));
    try {
      expect(markedProcesses(token)).toEqual([pid]);
      expect(markedProcesses(newAgentToken())).toEqual([]);
      expect(signalMarked(token, "SIGKILL")).toBe(1);
      await until(() => markedProcesses(token).length === 0);
    } finally {
      try {
        process.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  });
});
