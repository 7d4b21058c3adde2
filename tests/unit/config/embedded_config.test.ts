/** The embedded defaults compiled at build time stay in step with anchors.toml. */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  EMBEDDED_PATH,
  embeddedConfig,
  mergeConfigs,
  parseConfigText,
} from "../../../lib/config/config.ts";
import { compileDefaults, EMBEDDED_JSON } from "../../../lib/config/embedded_config.ts";
import { ROOT } from "../../helpers/cli.ts";

const toml = readFileSync(join(ROOT, "anchors.toml"), "utf8");

describe("embedded defaults", () => {
  test("lib/config/embedded_config.json is anchors.toml compiled (run `make build` after editing it)", () => {
    const stored = JSON.parse(readFileSync(EMBEDDED_JSON, "utf8"));
    expect(stored).toEqual(compileDefaults(toml));
  });

  test("an edit to anchors.toml changes what must be stored", () => {
    const edited = toml.replace("priority = 50", "priority = 51");
    expect(edited).not.toBe(toml);
    expect(compileDefaults(edited)).not.toEqual(compileDefaults(toml));
  });

  test("merging the compiled defaults gives what parsing anchors.toml gives, lines included", () => {
    const compiled = mergeConfigs([embeddedConfig()]);
    const parsed = mergeConfigs([parseConfigText(EMBEDDED_PATH, toml)]);
    expect(compiled.profiles).toEqual(parsed.profiles);
    const shape = (m: typeof compiled) =>
      JSON.stringify(
        [m.declarativeAnchors, m.declarativeDetectors],
        (_, v) => v instanceof RegExp ? String(v) : typeof v === "function" ? "fn" : v,
      );
    expect(shape(compiled)).toBe(shape(parsed));
    expect(compiled.declarativeAnchors.map((a) => a.origin)).toContain(
      `${EMBEDDED_PATH}:51`,
    );
  });
});
