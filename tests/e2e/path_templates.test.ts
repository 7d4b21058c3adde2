/**
 * Path templates in a user's profile, end to end: `check` names an unset variable with no
 * default (file, line, key) and a `{session}` in `logs`; `run` skips a pattern it cannot
 * expand with a diagnostic instead of reading `/logs/*`; `{cwd:alnum}` finds a log in a
 * folder named after the working directory.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { homeEnv, turnguard } from "../helpers/cli.ts";

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-tpl-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const config = (body: string) => {
  const path = join(home, "turnguard.toml");
  writeFileSync(path, body);
  return path;
};

describe("path templates in a profile", () => {
  test("check: an unset variable without a default is an error naming file, line, key", async () => {
    const path = config(
      `# custom\n[agent.custom]\nmatch = ["x"]\nlogs = ["$TG_NO_SUCH_DIR/x.log"]\n`,
    );
    const env = { ...homeEnv(home), TG_NO_SUCH_DIR: undefined };
    const r = await turnguard(["check", "--config", path], { env });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `turnguard: ${path}:4: agent.custom.logs[0]: $TG_NO_SUCH_DIR/x.log: ` +
        "$TG_NO_SUCH_DIR is not set and has no default (${TG_NO_SUCH_DIR:-…})",
    );
    const ok = await turnguard(["check", "--config", path], {
      env: { ...env, TG_NO_SUCH_DIR: "/tmp" },
    });
    expect(ok.code).toBe(0);
  });

  test("check and run: {session} in logs, an unknown {cwd:FORM} are config errors", async () => {
    for (
      const [logs, words] of [
        ["$HOME/{session}.log", "cannot name {session}"],
        ["$HOME/{cwd:md5}.log", "unknown form"],
      ]
    ) {
      const path = config(`[agent.custom]\nlogs = [${JSON.stringify(logs)}]\n`);
      const r = await turnguard(["check", "--config", path], { env: homeEnv(home) });
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(words)]);
      expect(r.stderr).toContain(`${path}:2: agent.custom.logs[0]`);
      const run = await turnguard(["run", "--config", path, "--agent", "custom", "--", "true"], {
        env: homeEnv(home),
      });
      expect(run.code).toBe(125);
    }
  });

  test("run: a pattern it cannot expand is skipped with a diagnostic, not read as /x.log", async () => {
    const path = config(`[agent.custom]\nlogs = ["$TG_NO_SUCH_DIR/x.log"]\n`);
    const r = await turnguard(
      ["run", "-v", "--outcome-json", "--config", path, "--agent", "custom", "--", "true"],
      { env: { ...homeEnv(home), TG_NO_SUCH_DIR: undefined } },
    );
    const o = JSON.parse(r.stdout);
    expect(o.diagnostics).toContainEqual(expect.stringContaining("$TG_NO_SUCH_DIR is not set"));
  });

  test("run: {cwd:alnum} names the folder the agent logs to for this working directory", async () => {
    const work = join(home, "my.app");
    mkdirSync(work, { recursive: true });
    const logDir = join(home, "logs", work.replace(/[^A-Za-z0-9]/g, "-"));
    mkdirSync(logDir, { recursive: true });
    writeFileSync(join(logDir, "a.log"), "");
    const path = config(`[agent.custom]\nlogs = ["$HOME/logs/{cwd:alnum}/*.log"]\n`);
    const agent = join(home, "agent.sh");
    writeFileSync(
      agent,
      `#!/bin/sh\necho 'ERROR upstream: 503 Service Unavailable' >> '${join(logDir, "a.log")}'\n`,
      { mode: 0o755 },
    );
    const r = await turnguard(
      ["run", "--outcome-json", "--config", path, "--agent", "custom", "--", agent],
      { env: homeEnv(home), cwd: work },
    );
    const o = JSON.parse(r.stdout);
    expect([r.code, o.status, o.error?.category]).toEqual([1, "failed", "capacity"]);
  });
});
