/**
 * The publish flags of `turnguard proxy`: `--publish-fallback` arms the fallback for the
 * selected profile, `--var name=value` (repeatable) sets a turn variable. Kept here so the
 * proxy command adds them with one spread.
 */
import type { OptionSpec } from "../cli/args.ts";
import { envVars, layerVars, parseVarFlags, type TurnVars } from "./vars.ts";

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
