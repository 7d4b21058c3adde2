import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../../lib/errors.ts";
import { mergeConfigs, parseConfigText } from "../../../lib/config/config.ts";

const merged = (...texts: string[]) =>
  mergeConfigs(texts.map((t, i) => parseConfigText(`/c${i}.toml`, t)));

describe("config fail_fast", () => {
  test("off unless a file turns it on; the last file that sets it wins", () => {
    expect(merged("").failFast).toBe(false);
    expect(merged("fail_fast = true").failFast).toBe(true);
    expect(merged("fail_fast = true", "fail_fast = false").failFast).toBe(false);
  });

  test("a profile's own fail_fast is kept, and a later file's profile without it keeps it", () => {
    const m = merged("[agent.a]\nfail_fast = false\n", "[agent.a]\nlogs = []\n[agent.b]\n");
    expect(m.profiles.get("a")!.failFast).toBe(false);
    expect(m.profiles.get("b")!.failFast).toBeUndefined();
  });

  test("a value that is no boolean names the file, line and key", () => {
    expect(() => parseConfigText("/c.toml", '\n[agent.a]\nfail_fast = "yes"\n')).toThrow(
      ConfigError,
    );
    try {
      parseConfigText("/c.toml", '\n[agent.a]\nfail_fast = "yes"\n');
    } catch (err) {
      expect((err as Error).message).toContain("/c.toml:3");
      expect((err as Error).message).toContain("agent.a.fail_fast");
    }
  });
});
