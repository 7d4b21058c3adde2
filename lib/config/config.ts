/**
 * Configuration: the embedded anchors.toml extended by one user file, validated with
 * valibot before any agent starts. Every error names the file, line and key path.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import * as v from "valibot";
import { once } from "../once.ts";
import embeddedToml from "../../anchors.toml" with { type: "text" };
import compiledDefaults from "./embedded_config.json" with { type: "json" };
import { compileAnchor, DeclarativeAnchorSchema } from "../cause/anchors.ts";
import { absoluteDir, homeDir } from "../io/env_dirs.ts";
import { parseTemplate, templateNeeds } from "../io/path_template.ts";
import { ConfigError } from "../errors.ts";
import { errCode } from "../io/logfs.ts";
import { compileDetector, DeclarativeDetectorSchema } from "../publish/declarative.ts";
import { type PublishTable, PublishTableSchema } from "../publish/settings.ts";
import { type TelemetryTable, TelemetryTableSchema } from "../telemetry/settings.ts";
import { regexRisk } from "./regex_risk.ts";
import { formatKeyPath, type KeyStep, locateKey } from "./toml_locate.ts";
import { parseTomlWith } from "./toml_file.ts";

/**
 * Why a path template cannot be used under `key`: it does not parse, `logs` names
 * `{session}`, or `session_records` does not (it would read other sessions' files).
 */
export function templateProblem(template: string, key: "logs" | "session_records"): string | null {
  try {
    parseTemplate(template);
    const needs = templateNeeds(template);
    if (key === "logs" && needs.session) {
      return "a logs pattern cannot name {session}: logs are snapshotted before the session " +
        "is known; name the session's files in session_records";
    }
    if (key === "session_records" && !needs.session) {
      return "a session_records pattern must name {session}";
    }
    return null;
  } catch (err) {
    return `${JSON.stringify(template)}: ${(err as Error).message}`;
  }
}

/** A path template under `key`, checked by templateProblem. */
const TemplateSchema = (key: "logs" | "session_records") =>
  v.pipe(
    v.string(),
    v.check(
      (t) => templateProblem(t, key) === null,
      (issue) => templateProblem(String(issue.input), key) ?? "invalid path template",
    ),
  );

/**
 * Whether a regex runs in time linear in its input: no backreference (`\1`, `\k<name>`)
 * and no repeated group holding an unbounded repetition (lib/config/regex_risk.ts).
 */
function linearRegex(source: string): boolean {
  if (/\\(?:[1-9]|k<)/.test(source)) return false;
  return regexRisk(source) === null;
}

/** One entry of a profile's `notices`: a literal, or `{ regex = "..." }`. */
const NoticeSchema = once(() =>
  v.union([
    v.pipe(v.string(), v.minLength(1, "a notice literal may not be empty")),
    v.strictObject({
      regex: v.pipe(
        v.string(),
        v.minLength(1, "a notice regex may not be empty"),
        v.check((s) => tryRegExp(s) !== null, "is not a valid regular expression"),
        v.check(
          linearRegex,
          "must be linear: no backreference, no repeated group holding an unbounded repetition",
        ),
      ),
      ignore_case: v.optional(v.boolean(), false),
    }),
  ], 'a notice is a string (a literal) or a table { regex = "..." }')
);
/** A notice entry as written (a missing `ignore_case` is false). */
type NoticeEntry = v.InferInput<ReturnType<typeof NoticeSchema>>;

function tryRegExp(source: string): RegExp | null {
  try {
    return new RegExp(source, "ym");
  } catch {
    return null;
  }
}

/**
 * A profile's notices compiled to sticky, multiline regexes (lib/cause/notices.ts tries
 * each where a notice may start).
 */
export function compileNotices(entries: readonly NoticeEntry[]): RegExp[] {
  return entries.map((e) =>
    typeof e === "string"
      ? new RegExp(e.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "ym")
      : new RegExp(e.regex, e.ignore_case ? "ymi" : "ym")
  );
}

/** An agent profile as written under `[agent.NAME]`. */
export const ProfileSchema = once(() =>
  v.strictObject({
    /** Command basenames this profile is chosen for. */
    match: v.optional(v.array(v.string())),
    /**
     * Log path patterns (lib/io/path_template.ts: `$VAR`, `${VAR:-default}`, `~`, `{cwd}`,
     * `{cwd:FORM}`; `*`, `?`). Not `{session}`: logs are snapshotted before a turn's session
     * is known (print mode never knows it).
     */
    logs: v.optional(v.array(TemplateSchema("logs"))),
    /** `glog` lines carry the writer's pid, so a turn's lines can be told from others'. */
    log_format: v.optional(v.picklist(["plain", "glog"])),
    /** Anchor id patterns (`agy.*`) this profile uses; absent: every anchor for the profile. */
    anchors: v.optional(v.array(v.string())),
    /**
     * The agent's own per-session record files (docs/EVIDENCE.md): path patterns like
     * `logs`, with `{session}` (or `{session:N}`, its first N characters) for the session id
     * the agent gave on the wire; a pattern without it is an error (it would read others').
     */
    session_records: v.optional(v.array(TemplateSchema("session_records"))),
    /**
     * The agent's own notices (docs/EVIDENCE.md "Agent notices"): text it streams as reply
     * text that the model never wrote (retry banners, failure lines). Each a literal
     * string or `{ regex = "..." }` (linear: no backreference, no nested unbounded
     * repetition); they are removed from `reply.text`, and a failure among them fails a
     * turn that ends on it.
     */
    notices: v.optional(v.array(NoticeSchema())),
    /** How long to wait, after the agent answered, for its last session records (ms). */
    records_settle_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(5000))),
    /**
     * The longest the turn's response waits for the end record its readers declare
     * (`endsTurn`, docs/EVIDENCE.md "The turn's end"), in ms.
     */
    records_wait_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60000))),
    /** The publish fallback (`[agent.NAME.publish]`, see docs/PUBLISH.md). */
    publish: v.optional(PublishTableSchema()),
    /** `true`/`false`: `--fail-fast` for this agent, over the file's global `fail_fast`. */
    fail_fast: v.optional(v.boolean()),
  })
);

/** One config file: profiles, declarative anchors and code plugin paths. */
export const ConfigFileSchema = once(() =>
  v.strictObject({
    plugins: v.optional(v.array(v.pipe(v.string(), v.minLength(1)))),
    /** Time each code plugin file may take to decide one turn, in milliseconds. */
    plugin_budget_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    /** `false`: `run` and `proxy` journal nothing (like `--no-journal`). */
    journal: v.optional(v.boolean()),
    /** `true`: what left the agent's process group outlives the turn (like `--keep-daemons`). */
    keep_daemons: v.optional(v.boolean()),
    /**
     * `true`: a turn whose agent retries a cause retrying cannot cure ends at once (like
     * `--fail-fast`); a profile's own `fail_fast` wins.
     */
    fail_fast: v.optional(v.boolean()),
    agent: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.-]+$/)), ProfileSchema())),
    anchor: v.optional(v.array(DeclarativeAnchorSchema())),
    detector: v.optional(v.array(DeclarativeDetectorSchema())),
    /** OTLP export of every turn's Outcome (docs/TELEMETRY.md). */
    telemetry: v.optional(TelemetryTableSchema()),
  })
);
export type ConfigFile = v.InferOutput<ReturnType<typeof ConfigFileSchema>>;

/** A resolved agent profile. */
export interface Profile {
  name: string;
  match: string[];
  logs: string[];
  logFormat: "plain" | "glog";
  anchors: string[] | null;
  /** `session_records` patterns (absent: none). */
  sessionRecords?: string[];
  /** `notices`, compiled (absent: none declared). */
  notices?: RegExp[];
  /** `records_settle_ms` (absent: DEFAULT_SETTLE_MS of lib/cause/session_records.ts). */
  recordsSettleMs?: number;
  /** `records_wait_ms` (absent: DEFAULT_WAIT_MS of lib/cause/records_wait.ts). */
  recordsWaitMs?: number;
  /** The `publish` table, when the profile has one. */
  publish?: PublishTable;
  /** The profile's own `fail_fast` (absent: the global one decides). */
  failFast?: boolean;
  /** Where `logs` and `session_records` were written (for `check`'s errors). */
  origins?: { logs?: KeyOrigin; session_records?: KeyOrigin };
}

/** Where a key of a config file was written: file, line, key path. */
export interface KeyOrigin {
  path: string;
  line: number | null;
  key: string;
}

/** A config file after parsing, with where it came from. */
export interface ParsedConfigFile {
  path: string;
  source: string;
  data: ConfigFile;
  /** Lines of keys located ahead of time (`anchor[2]`); others are found in `source`. */
  keyLines?: Readonly<Record<string, number | null>>;
}

/** The path shown for the embedded defaults. */
export const EMBEDDED_PATH = "<embedded anchors.toml>";

/** Parses and validates one config file's text; throws ConfigError naming file/line/key. */
export function parseConfigText(path: string, source: string): ParsedConfigFile {
  return { path, source, data: parseTomlWith(path, source, ConfigFileSchema()) };
}

/** Reads and validates a config file from disk. */
export function readConfigFile(path: string): ParsedConfigFile {
  let source: string;
  try {
    source = readFileSync(path, "utf8");
  } catch (err) {
    const code = errCode(err);
    throw new ConfigError(path, null, null, `cannot read config file (${code})`);
  }
  return parseConfigText(path, source);
}

/**
 * The embedded defaults, validated like any user file, but at build time: lib/config/embedded_config.ts
 * compiles anchors.toml into lib/config/embedded_config.json, and a test keeps the two in step.
 */
export function embeddedConfig(): ParsedConfigFile {
  return {
    path: EMBEDDED_PATH,
    source: embeddedToml,
    // The output of parseConfigText for anchors.toml, as JSON (tests/unit/config/embedded_config.test.ts).
    data: compiledDefaults.data as ConfigFile,
    keyLines: compiledDefaults.keyLines,
  };
}

/** The line of `path` in a config file: located ahead of time, else found in its source. */
function keyLine(file: ParsedConfigFile, path: readonly KeyStep[]): number | null {
  const known = file.keyLines?.[formatKeyPath(path)];
  return known !== undefined ? known : locateKey(file.source, path);
}

/**
 * Which user config file applies: `--config`, else `$TURNGUARD_CONFIG`, else
 * `$XDG_CONFIG_HOME/turnguard/turnguard.toml` (`$HOME/.config` by default; `anchors.toml` is
 * accepted as an alias) when it exists; a relative `XDG_CONFIG_HOME` or `HOME` is ignored.
 * An explicitly named file that does not exist is an error.
 */
export function userConfigPath(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  cwd: string,
): string | null {
  if (flag !== undefined) return resolve(cwd, flag);
  if (env.TURNGUARD_CONFIG) return resolve(cwd, env.TURNGUARD_CONFIG);
  // A relative XDG_CONFIG_HOME or HOME would load a config (and the plugins it names) from
  // the working directory: only absolute ones count (lib/io/env_dirs.ts).
  const home = homeDir(env, () => null);
  const xdg = absoluteDir(env, "XDG_CONFIG_HOME") ?? (home ? join(home, ".config") : null);
  if (!xdg) return null;
  // turnguard.toml is the documented name; anchors.toml, its earlier name, is an alias.
  // When both exist, turnguard.toml wins and anchors.toml is not read.
  return USER_CONFIG_NAMES.map((name) => join(xdg, "turnguard", name)).find(existsSync) ?? null;
}

/** The user config's file names in `$XDG_CONFIG_HOME/turnguard/`, the first found wins. */
export const USER_CONFIG_NAMES = ["turnguard.toml", "anchors.toml"] as const;

/** A code plugin named by a config file, resolved against that file's directory. */
export interface PluginRef {
  path: string;
  /** The config file (and line) that named it. */
  from: string;
  line: number | null;
}

/** Declarative anchors compiled, profiles merged, plugin paths resolved: the whole config. */
export interface MergedConfig {
  files: string[];
  profiles: Map<string, Profile>;
  declarativeAnchors: ReturnType<typeof compileAnchor>[];
  declarativeDetectors: ReturnType<typeof compileDetector>[];
  plugins: PluginRef[];
  /** `plugin_budget_ms` of the last file that sets it; null: the default. */
  pluginBudgetMs: number | null;
  /** `[telemetry]`: a later file's keys replace an earlier one's; null: no file has one. */
  telemetry: TelemetryTable | null;
  /** `journal` of the last file that sets it: false turns the journal off. */
  journal: boolean;
  /** `keep_daemons` of the last file that sets it (default false). */
  keepDaemons: boolean;
  /** `fail_fast` of the last file that sets it (default false). */
  failFast: boolean;
  /** What is valid but likely wrong, one line each naming file, line and key. */
  warnings: string[];
}

/**
 * Merges config files in order (embedded first): a later profile's fields replace the
 * earlier one's, a later anchor with the same id replaces it, plugin lists add up.
 */
export function mergeConfigs(files: readonly ParsedConfigFile[]): MergedConfig {
  const profiles = new Map<string, Profile>();
  const anchors = new Map<string, ReturnType<typeof compileAnchor>>();
  const plugins: PluginRef[] = [];
  const warnings: string[] = [];
  const detectors = new Map<string, ReturnType<typeof compileDetector>>();
  let pluginBudgetMs: number | null = null;
  let telemetry: TelemetryTable | null = null;
  let journal = true;
  let keepDaemons = false;
  let failFast = false;
  for (const file of files) {
    pluginBudgetMs = file.data.plugin_budget_ms ?? pluginBudgetMs;
    if (file.data.telemetry) telemetry = { ...telemetry ?? {}, ...file.data.telemetry };
    journal = file.data.journal ?? journal;
    keepDaemons = file.data.keep_daemons ?? keepDaemons;
    failFast = file.data.fail_fast ?? failFast;
    for (const [name, p] of Object.entries(file.data.agent ?? {})) {
      const prev = profiles.get(name);
      const origin = (key: "logs" | "session_records"): KeyOrigin | undefined =>
        p[key] === undefined ? prev?.origins?.[key] : {
          path: file.path,
          // The embedded defaults' templates all have defaults: no line is ever needed.
          line: file.path === EMBEDDED_PATH ? null : keyLine(file, ["agent", name, key]),
          key: `agent.${name}.${key}`,
        };
      profiles.set(name, {
        name,
        match: p.match ?? prev?.match ?? [name],
        logs: p.logs ?? prev?.logs ?? [],
        logFormat: p.log_format ?? prev?.logFormat ?? "plain",
        anchors: p.anchors ?? prev?.anchors ?? null,
        sessionRecords: p.session_records ?? prev?.sessionRecords,
        recordsSettleMs: p.records_settle_ms ?? prev?.recordsSettleMs,
        recordsWaitMs: p.records_wait_ms ?? prev?.recordsWaitMs,
        notices: p.notices ? compileNotices(p.notices) : prev?.notices,
        publish: p.publish ?? prev?.publish,
        failFast: p.fail_fast ?? prev?.failFast,
        origins: { logs: origin("logs"), session_records: origin("session_records") },
      });
    }
    (file.data.anchor ?? []).forEach((decl, i) => {
      const line = keyLine(file, ["anchor", i]);
      anchors.delete(decl.id);
      anchors.set(decl.id, compileAnchor(decl, `${file.path}${line ? `:${line}` : ""}`));
      const risk = decl.regex === undefined ? null : regexRisk(decl.regex);
      if (risk !== null) {
        const at = `${file.path}:${keyLine(file, ["anchor", i, "regex"]) ?? line ?? "?"}`;
        warnings.push(`${at}: anchor[${i}].regex (${decl.id}): ${risk}`);
      }
    });
    (file.data.detector ?? []).forEach((decl, i) => {
      const line = keyLine(file, ["detector", i]);
      detectors.delete(decl.id);
      detectors.set(decl.id, compileDetector(decl, `${file.path}${line ? `:${line}` : ""}`));
    });
    (file.data.plugins ?? []).forEach((p, i) => {
      // Built-in code is compiled in; the embedded file naming a path would load code
      // from wherever turnguard happens to run.
      if (file.path === EMBEDDED_PATH) {
        throw new ConfigError(
          file.path,
          locateKey(file.source, ["plugins", i]),
          `plugins[${i}]`,
          "the embedded defaults may not name code plugins",
        );
      }
      plugins.push({
        path: isAbsolute(p) ? p : resolve(dirname(file.path), p),
        from: file.path,
        line: locateKey(file.source, ["plugins", i]),
      });
    });
  }
  return {
    files: files.map((f) => f.path),
    profiles,
    declarativeAnchors: [...anchors.values()],
    declarativeDetectors: [...detectors.values()],
    plugins,
    pluginBudgetMs,
    telemetry,
    journal,
    keepDaemons,
    failFast,
    warnings,
  };
}
