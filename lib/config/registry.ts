/**
 * The registry: everything a command needs from configuration, assembled once at start-up
 * (built-in packs, embedded anchors.toml, the user file and the plugins it names).
 */
import * as v from "valibot";
import {
  embeddedConfig,
  mergeConfigs,
  type MergedConfig,
  type Profile,
  readConfigFile,
  userConfigPath,
} from "./config.ts";
import {
  AnchorSchema,
  type LoadedAnchor,
  type LoadedPublishDetector,
  type LoadedRecordReader,
  PublishDetectorSchema,
} from "../plugin/api.ts";
import { builtinPlugins, loadCodePlugins, merge } from "./packs.ts";
import { DEFAULT_PLUGIN_BUDGET_MS } from "../plugin/host.ts";
import { UsageError } from "../errors.ts";
import { basename } from "node:path";
import { segmentRegExp } from "../io/glob.ts";
import { buildClassifier, type Classifier } from "../cause/classifier.ts";

/** The assembled configuration. */
export interface Registry {
  files: string[];
  profiles: Map<string, Profile>;
  anchors: LoadedAnchor[];
  detectors: LoadedPublishDetector[];
  /** Session record readers (docs/EVIDENCE.md). */
  readers: LoadedRecordReader[];
  /** The code plugin files the config files name, in load order. */
  pluginFiles: string[];
  /** Time each code plugin file may take to decide one turn. */
  pluginBudgetMs: number;
  /** `[telemetry]` of the config files, merged (null: none sets it). */
  telemetry: MergedConfig["telemetry"];
  /** Whether `run` and `proxy` journal their turns (config `journal = false` turns it off). */
  journal: boolean;
  /** Whether what left the agent's process group outlives the turn (`keep_daemons`). */
  keepDaemons: boolean;
  /** The global `fail_fast` (a profile's own `failFast` wins; `--fail-fast` turns it on). */
  failFast: boolean;
  /** What the config files say that is valid but likely wrong (`turnguard check` prints it). */
  warnings: string[];
}

/** Where to look for configuration. */
export interface RegistryOptions {
  configFlag?: string;
  env: Record<string, string | undefined>;
  cwd: string;
}

/** Loads and validates all configuration; throws ConfigError on the first problem. */
export async function loadRegistry(opts: RegistryOptions): Promise<Registry> {
  const files = [embeddedConfig()];
  const userPath = userConfigPath(opts.configFlag, opts.env, opts.cwd);
  if (userPath) files.push(readConfigFile(userPath));
  const merged = mergeConfigs(files);
  const declarative = merged.declarativeAnchors.map((a) => v.parse(AnchorSchema(), a));
  const pluginBudgetMs = merged.pluginBudgetMs ?? DEFAULT_PLUGIN_BUDGET_MS;
  const code = await loadCodePlugins(merged.plugins, { budgetMs: pluginBudgetMs });
  const detectors = merged.declarativeDetectors.map((d) => v.parse(PublishDetectorSchema(), d));
  const all = merge([builtinPlugins(), { anchors: declarative, detectors }, code]);
  return {
    files: merged.files,
    profiles: merged.profiles,
    ...all,
    pluginFiles: merged.plugins.map((p) => p.path),
    pluginBudgetMs,
    telemetry: merged.telemetry,
    journal: merged.journal,
    keepDaemons: merged.keepDaemons,
    failFast: merged.failFast,
    warnings: merged.warnings,
  };
}

/**
 * Chooses the agent profile: by `--agent NAME` (which must exist), else the profile whose
 * `match` list names the command's basename, else an ad-hoc profile with no logs.
 */
export function selectProfile(
  registry: Registry,
  agentFlag: string | undefined,
  command: string,
): Profile {
  if (agentFlag !== undefined) return requireProfile(registry, agentFlag);
  const base = basename(command);
  for (const p of registry.profiles.values()) if (p.match.includes(base)) return p;
  return { name: base, match: [base], logs: [], logFormat: "plain", anchors: null };
}

/** The profile `--agent NAME` names; a usage error listing the known ones when none is. */
export function requireProfile(registry: Registry, name: string): Profile {
  const p = registry.profiles.get(name);
  if (p) return p;
  const known = [...registry.profiles.keys()].join(", ") || "none";
  throw new UsageError(`--agent ${name}: no such agent profile (known: ${known})`);
}

/** The anchors that apply to a profile: its own (by `agents`) and those its id patterns allow. */
export function profileAnchors(anchors: readonly LoadedAnchor[], profile: Profile): LoadedAnchor[] {
  const patterns = profile.anchors?.map(segmentRegExp) ?? null;
  return anchors.filter((a) =>
    (a.agents === undefined || a.agents.includes(profile.name)) &&
    (patterns === null || patterns.some((re) => re.test(a.id)))
  );
}

/**
 * The classifier of a profile: its anchors ordered once for the matcher. Built once per
 * command and passed down to everything that finds or classifies a cause.
 */
export function profileClassifier(registry: Registry, profile: Profile): Classifier {
  return buildClassifier(profileAnchors(registry.anchors, profile), profile.notices);
}

/** The session record readers that apply to a profile: those whose `agents` name it, or all. */
export function profileReaders(
  readers: readonly LoadedRecordReader[],
  profile: Profile,
): LoadedRecordReader[] {
  return readers.filter((r) => r.agents === undefined || r.agents.includes(profile.name));
}
