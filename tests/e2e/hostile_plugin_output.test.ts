/**
 * Nothing unredacted on turnguard's own outputs: a user plugin's writes to its stdout or
 * stderr are shown on turnguard's stderr through its sink (lib/plugin/worker.js forwards
 * them, lib/io/output.ts redacts). A plugin that writes a key in pieces — the prefix in one
 * `write`, the secret itself in the next — must not get the secret past the redaction.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { homeEnv, turnguard } from "../helpers/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "tg-hostile-output-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SECRET = "abcdefghijklmnopqrstuvwxyz0123456789";

describe("a plugin's output, written in pieces", () => {
  test("a key written in two writes is redacted whole", async () => {
    writeFileSync(
      join(dir, "split.js"),
      `process.stderr.write("key: sk-ant-api03-");
process.stdout.write("${SECRET.slice(0, 10)}");
process.stderr.write("${SECRET.slice(10)}\\n");
process.stdout.write("a last line without its newline");
export default { anchors: [] };
`,
    );
    writeFileSync(join(dir, "turnguard.toml"), `plugins = ["split.js"]\n`);
    const r = await turnguard(["check", "--config", join(dir, "turnguard.toml")], {
      env: homeEnv(dir),
    });
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain(SECRET.slice(10));
    expect(r.stderr).toContain("key: [REDACTED:anthropic]");
    expect(r.stderr).toContain("a last line without its newline");
    expect(r.stdout).not.toContain("key:");
  });
});
