/**
 * `turnguard types`: the plugin API's declarations, for authors without a checkout. They
 * are checked against the real schema-derived types, and a plugin typed with them loads.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DENO, ROOT, turnguard } from "../helpers/cli.ts";

setDefaultTimeout(60_000);

test("the declarations declare the same types as lib/plugin/api.ts (deno check)", () => {
  const r = spawnSync(DENO, ["check", "tests/fixtures/plugin_types_check.ts"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  expect({ status: r.status, errors: r.stderr.split("\n").filter((l) => /ERROR/.test(l)) })
    .toEqual({ status: 0, errors: [] });
});

test("turnguard types prints them; a plugin typed with them type-checks and loads", async () => {
  const r = await turnguard(["types"]);
  expect(r.code).toBe(0);
  expect(r.stdout).toBe(readFileSync(join(ROOT, "lib", "types", "plugin_api.d.ts"), "utf8"));
  const dir = mkdtempSync(join(tmpdir(), "tg-types-"));
  try {
    writeFileSync(join(dir, "turnguard.d.ts"), r.stdout);
    writeFileSync(
      join(dir, "mine.ts"),
      `import type { AnchorHit, AnchorInput, PluginModule } from "./turnguard.d.ts";
const plugin: PluginModule = {
  anchors: [{
    id: "mine.budget",
    on: ["log"],
    match: (input: AnchorInput): AnchorHit | null =>
      input.kind === "log" && input.line.includes("budget gone")
        ? { cause: "budget gone", category: "quota" }
        : null,
  }],
};
export default plugin;
`,
    );
    writeFileSync(join(dir, "turnguard.toml"), 'plugins = ["mine.ts"]\n');
    const check = spawnSync(DENO, ["check", join(dir, "mine.ts")], { encoding: "utf8" });
    expect(check.status).toBe(0);
    const scan = await turnguard(
      ["explain", "--config", join(dir, "turnguard.toml"), "--kind", "log", "x budget gone"],
    );
    expect(scan.code).toBe(0);
    expect(scan.stdout).toContain("mine.budget");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
