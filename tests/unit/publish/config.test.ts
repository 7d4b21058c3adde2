import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, UsageError } from "../../../lib/errors.ts";
import { embeddedConfig, mergeConfigs, parseConfigText } from "../../../lib/config/config.ts";
import { loadRegistry } from "../../../lib/config/registry.ts";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { parseOptions } from "../../../lib/cli/args.ts";
import { PUBLISH_OPTIONS, readPublishFlags } from "../../../lib/cli/publish_flags.ts";
import {
  DEFAULT_PUBLISH_COMMAND,
  publishSettings,
  selectDetectors,
} from "../../../lib/publish/settings.ts";
import {
  envVars,
  fillPlaceholders,
  layerVars,
  metaVars,
  parseVarFlags,
  placeholdersIn,
} from "../../../lib/publish/vars.ts";

describe("turn variables", () => {
  test("--var flags: lower-cased names, values kept whole", () => {
    expect([...parseVarFlags(["channel=C1", "Reply_To=e=f", "empty="])]).toEqual([
      ["channel", "C1"],
      ["reply_to", "e=f"],
      ["empty", ""],
    ]);
  });

  test("a malformed --var is a usage error naming it", () => {
    for (const bad of ["novalue", "=x", "1a=b", "a-b=c"]) {
      expect(() => parseVarFlags([bad])).toThrow(UsageError);
      expect(() => parseVarFlags([bad])).toThrow(`got "${bad}"`);
    }
  });

  test("TURNGUARD_VAR_* environment variables", () => {
    const env = { TURNGUARD_VAR_CHANNEL: "C", TURNGUARD_VAR_REPLY_TO: "E", OTHER: "x" };
    expect([...envVars(env)]).toEqual([["channel", "C"], ["reply_to", "E"]]);
  });

  test("_meta.turnguard: strings, numbers, booleans; the rest is a diagnostic", () => {
    const d: string[] = [];
    const vars = metaVars(
      { turnguard: { channel: "C", n: 5, b: true, o: {}, "bad-name": "x" } },
      d,
    );
    expect([...vars]).toEqual([["channel", "C"], ["n", "5"], ["b", "true"]]);
    expect(d).toEqual([
      "publish: _meta.turnguard.o is not a usable variable; skipped",
      "publish: _meta.turnguard.bad-name is not a usable variable; skipped",
    ]);
    expect([...metaVars(undefined, d)]).toEqual([]);
    expect([...metaVars({ other: 1 }, d)]).toEqual([]);
    expect([...metaVars({ turnguard: "x" }, d)]).toEqual([]);
    expect(d.at(-1)).toBe("publish: _meta.turnguard is not an object; its variables are ignored");
  });

  test("later layers win: env < --var < _meta.turnguard", () => {
    const flags = readPublishFlags(
      { var: ["channel=FLAG", "reply_to=R"] },
      { TURNGUARD_VAR_CHANNEL: "ENV", TURNGUARD_VAR_EXTRA: "X" },
    );
    const vars = layerVars(flags.vars, metaVars({ turnguard: { channel: "META" } }, []));
    expect(Object.fromEntries(vars)).toEqual({ channel: "META", extra: "X", reply_to: "R" });
  });

  test("a variable named __proto__ is just a variable", () => {
    const vars = parseVarFlags(["__proto__=x"]);
    expect(fillPlaceholders(["{__proto__}"], vars)).toEqual({ ok: true, argv: ["x"] });
  });
});

describe("placeholders", () => {
  const vars = new Map([["channel", "C1"], ["reply_to", "E1"], ["text", "{channel} $(x)"]]);
  test("filled per argument, one pass, escapes for braces", () => {
    expect(fillPlaceholders(
      ["buzz", "--channel", "{channel}", "--to={REPLY_TO}", "{text}", "{{literal}}", "{ a }"],
      vars,
    )).toEqual({
      ok: true,
      argv: ["buzz", "--channel", "C1", "--to=E1", "{channel} $(x)", "{literal}", "{ a }"],
    });
  });

  test("missing variables are named, not filled with nothing", () => {
    expect(fillPlaceholders(["{channel}", "{thread}", "{thread}{x}"], vars)).toEqual({
      ok: false,
      missing: ["thread", "x"],
    });
  });

  test("placeholdersIn", () => {
    expect(placeholdersIn("--x={Text}{{y}}{z}")).toEqual(["text", "z"]);
  });
});

describe("publish settings", () => {
  test("off by default; armed by the table or the flag", () => {
    expect(publishSettings(undefined, false)).toBeNull();
    expect(publishSettings({ command: ["x"] }, false)).toBeNull();
    expect(publishSettings({ armed: false }, false)).toBeNull();
    expect(publishSettings(undefined, true)).toEqual({
      detectors: ["buzz"],
      command: [...DEFAULT_PUBLISH_COMMAND],
      stdin: true,
      timeoutMs: 30000,
      channelVar: "channel",
    });
    expect(publishSettings({ armed: true, timeout_ms: 5, channel_var: "Room" }, false))
      .toMatchObject({ timeoutMs: 5, channelVar: "room" });
  });

  test("stdin defaults to off when the command takes {text}", () => {
    expect(publishSettings({ armed: true, command: ["post", "{text}"] }, false)?.stdin).toBe(false);
    expect(publishSettings({ armed: true, command: ["post", "{text}"], stdin: true }, false)?.stdin)
      .toBe(true);
  });

  test("an unknown detector id is a usage error", () => {
    const settings = publishSettings({ detectors: ["buzz", "nope"] }, true)!;
    const loaded = builtinPlugins().detectors;
    expect(() => selectDetectors(settings, loaded, "agy")).toThrow(
      'agent profile agy: publish.detectors names unknown detector "nope" (known: buzz)',
    );
    const ok = publishSettings({ detectors: ["buzz"] }, true)!;
    expect(selectDetectors(ok, loaded, "agy").map((d) => d.id)).toEqual(["buzz"]);
  });
});

describe("anchors.toml: [agent.NAME.publish] and [[detector]]", () => {
  const TOML = `
[agent.bot]
match = ["bot"]

[agent.bot.publish]
armed = true
detectors = ["slack"]
command = ["slack-post", "send", "--room", "{room}", "{text}"]
timeout_ms = 5000
channel_var = "room"

[[detector]]
id = "slack"
command = "slack-post send"
channel_flags = ["--room", "-r"]
`;

  test("parsed, merged and compiled", () => {
    const merged = mergeConfigs([embeddedConfig(), parseConfigText("/u/anchors.toml", TOML)]);
    const bot = merged.profiles.get("bot")!;
    expect(bot.publish).toEqual({
      armed: true,
      detectors: ["slack"],
      command: ["slack-post", "send", "--room", "{room}", "{text}"],
      timeout_ms: 5000,
      channel_var: "room",
    });
    expect(publishSettings(bot.publish, false)).toEqual({
      detectors: ["slack"],
      command: ["slack-post", "send", "--room", "{room}", "{text}"],
      stdin: false,
      timeoutMs: 5000,
      channelVar: "room",
    });
    const [slack] = merged.declarativeDetectors;
    expect(slack.id).toBe("slack");
    expect(slack.origin).toBe("/u/anchors.toml:12");
    const detect = (command: string) =>
      slack.detect({ toolCallId: "t", status: "completed", rawInput: { command } }) ?? null;
    expect(detect("slack-post send -r R1 hello")).toEqual({ publish: true, channel: "R1" });
    expect(detect("slack-post send --room=R2 hello")).toEqual({ publish: true, channel: "R2" });
    expect(detect("slack-post list --room R1")).toBeNull();
    expect(detect("echo slack-post send")).toBeNull();
  });

  test("the registry loads declarative detectors next to the built-in one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-publish-"));
    const path = join(dir, "anchors.toml");
    writeFileSync(path, TOML);
    const registry = await loadRegistry({ configFlag: path, env: {}, cwd: dir });
    expect(registry.detectors.map((d) => d.id)).toEqual(["buzz", "slack"]);
    const bot = registry.profiles.get("bot")!;
    const settings = publishSettings(bot.publish, false)!;
    expect(selectDetectors(settings, registry.detectors, "bot").map((d) => d.id)).toEqual([
      "slack",
    ]);
  });

  const bad: Array<[string, string]> = [
    [
      '[agent.x.publish]\narmed = "yes"\n',
      '/u/a.toml:2: agent.x.publish.armed: Invalid type: Expected boolean but received "yes"',
    ],
    [
      "[agent.x.publish]\ncommand = []\n",
      "/u/a.toml:2: agent.x.publish.command: the command needs at least the program",
    ],
    [
      '[agent.x.publish]\ncommand = ["", "a"]\n',
      "/u/a.toml:2: agent.x.publish.command: the program (first element) must not be empty",
    ],
    [
      "[agent.x.publish]\ntimeout_ms = 0\n",
      "/u/a.toml:2: agent.x.publish.timeout_ms: Invalid value: Expected >=1 but received 0",
    ],
    [
      '[agent.x.publish]\nchannel_var = "a-b"\n',
      "/u/a.toml:2: agent.x.publish.channel_var: must be a variable name",
    ],
    [
      "[agent.x.publish]\nshell = true\n",
      "/u/a.toml:2: agent.x.publish.shell: unknown key `shell`",
    ],
    [
      '[[detector]]\nid = "d"\ncommand = "a | b"\n',
      "/u/a.toml:3: detector[0].command: must be one command: a program and its words",
    ],
    [
      '[[detector]]\nid = "d"\ncommand = "a"\nchannel_flags = ["room"]\n',
      "/u/a.toml:4: detector[0].channel_flags[0]: a flag starts with -",
    ],
  ];
  for (const [toml, message] of bad) {
    test(`bad config: ${message.split(": ").slice(1, 2)}`, () => {
      let error: unknown;
      try {
        parseConfigText("/u/a.toml", toml);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toBe(message);
    });
  }
});

describe("flags", () => {
  test("--publish-fallback and repeated --var parse with node:util", () => {
    const { values } = parseOptions("proxy", [
      "--publish-fallback",
      "--var",
      "channel=C",
      "--var=reply_to=E",
    ], PUBLISH_OPTIONS);
    const flags = readPublishFlags(values, {});
    expect(flags.arm).toBe(true);
    expect(Object.fromEntries(flags.vars)).toEqual({ channel: "C", reply_to: "E" });
    expect(readPublishFlags({}, {}).arm).toBe(false);
  });
});
