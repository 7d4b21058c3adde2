/**
 * captureStrayOutput (lib/io/output.ts): console output and runtime warnings of the main
 * thread reach stderr through the sink, redacted and escaped, bounded, never stdout. Run in
 * a child process, since it replaces the process's console.
 */
import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "../../helpers/cli.ts";

const KEY = "sk-ant-api03-" + "k".repeat(24);

test("console.* and process.emitWarning go to stderr, redacted, escaped and capped", () => {
  const script = `
    import { captureStrayOutput, STRAY_OUTPUT_BYTES } from ${
    JSON.stringify(join(ROOT, "lib/io/output.ts"))
  };
    import { stdioIdle } from ${JSON.stringify(join(ROOT, "lib/io/stdio.ts"))};
    captureStrayOutput();
    console.log("a dependency says ${KEY} \\x1b[2J");
    console.error({ nested: "value" });
    process.emitWarning("something is deprecated");
    for (let i = 0; i < 1000; i++) console.log("x".repeat(1024));
    await stdioIdle();
  `;
  const r = spawnSync(join(ROOT, "node_modules/.bin/bun"), ["-e", script], { encoding: "utf8" });
  expect(r.stdout).toBe("");
  const lines = r.stderr.split("\n");
  expect(lines[0]).toStartWith("turnguard: a dependency says ");
  expect(r.stderr).not.toContain(KEY);
  expect(lines[0]).toEndWith("\\x1b[2J");
  expect(lines[1]).toBe('turnguard: {"nested":"value"}');
  expect(lines[2]).toBe("turnguard: runtime warning: something is deprecated");
  expect(r.stderr).toContain("[further stray output dropped]");
  expect(r.stderr.length).toBeLessThan(80 * 1024);
});
