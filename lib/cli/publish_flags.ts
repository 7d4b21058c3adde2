/**
 * The publish flags of `turnguard proxy`: `--publish-fallback` arms the fallback for the
 * selected profile, `--var name=value` (repeatable) sets a turn variable. Kept here so the
 * proxy command adds them with one spread.
 */
import type { Profile } from "../config/config.ts";
import type { LoadedPublishDetector } from "../plugin/api.ts";
import type { PublishContext } from "../publish/engine.ts";
import { publishSettings, selectDetectors } from "../publish/settings.ts";
import type { OptionSpec } from "./args.ts";
import { envVars, layerVars, parseVarFlags, type TurnVars } from "../publish/vars.ts";

/** Option spec fragment for node:util parseArgs. */
export const PUBLISH_OPTIONS = {
  "publish-fallback": { type: "boolean" },
  var: { type: "string", multiple: true },
} satisfies OptionSpec;

/** What the publish flags say, with the environment's turn variables under them. */
export interface PublishFlags {
  arm: boolean;
  /** `TURNGUARD_VAR_*` layered under `--var` (per-prompt `_meta.turnguard` goes on top). */
  vars: TurnVars;
}

/** Reads the publish flags from parsed option values; a bad `--var` is a usage error. */
export function readPublishFlags(
  values: { "publish-fallback"?: boolean; var?: string[] },
  env: Readonly<Record<string, string | undefined>>,
): PublishFlags {
  return {
    arm: values["publish-fallback"] === true,
    vars: layerVars(envVars(env), parseVarFlags(values.var ?? [])),
  };
}

/**
 * The publish step of `turnguard proxy`'s turn end: armed by the profile's `publish` table
 * or by `--publish-fallback`, variables from `TURNGUARD_VAR_*` and `--var`. An unknown
 * detector or a bad `--var` is a usage error before the agent starts.
 */
export function proxyPublishContext(opts: {
  values: { "publish-fallback"?: boolean; var?: string[] };
  profile: Profile;
  detectors: readonly LoadedPublishDetector[];
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  warn?: (line: string) => void;
}): PublishContext {
  const flags = readPublishFlags(opts.values, opts.env);
  const settings = publishSettings(opts.profile.publish, flags.arm);
  const detectors = settings ? selectDetectors(settings, opts.detectors, opts.profile.name) : [];
  return {
    settings,
    detectors,
    vars: flags.vars,
    env: opts.env,
    cwd: opts.cwd,
    warn: opts.warn,
  };
}
