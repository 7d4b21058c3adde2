/**
 * Publish settings of an agent profile: the `[agent.NAME.publish]` table of anchors.toml
 * (schema defined here, merged by lib/config/config.ts), the defaults for the buzz bridge, and
 * the resolved settings the engine runs with. Off unless armed by the table or by
 * `--publish-fallback`.
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { UsageError } from "../errors.ts";
import { IdSchema, type LoadedPublishDetector } from "../plugin/api.ts";
import { placeholdersIn, VAR_NAME } from "./vars.ts";

/** `[agent.NAME.publish]` as written in anchors.toml. */
export const PublishTableSchema = once(() =>
  v.strictObject({
    /** Arm the fallback for this profile (default false; `--publish-fallback` arms it too). */
    armed: v.optional(v.boolean()),
    /** Detector ids that recognise a publish (default `["buzz"]`). */
    detectors: v.optional(
      v.pipe(v.array(IdSchema()), v.minLength(1, "name at least one detector")),
    ),
    /** The fallback command as an argv array with `{placeholders}`; never run by a shell. */
    command: v.optional(v.pipe(
      v.array(v.string()),
      v.minLength(1, "the command needs at least the program"),
      v.check((argv) => argv[0] !== "", "the program (first element) must not be empty"),
    )),
    /** Write the reply to the command's stdin (default: true unless it uses `{text}`). */
    stdin: v.optional(v.boolean()),
    /** How long the fallback may run before it is killed (default 30000). */
    timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(600_000))),
    /** The turn variable that holds the reply's channel (default `channel`). */
    channel_var: v.optional(v.pipe(v.string(), v.regex(VAR_NAME, "must be a variable name"))),
  })
);
export type PublishTable = v.InferOutput<ReturnType<typeof PublishTableSchema>>;

/** The default fallback: the buzz bridge's own publish command, threaded to the prompt. */
export const DEFAULT_PUBLISH_COMMAND: readonly string[] = [
  "buzz",
  "messages",
  "send",
  "--channel",
  "{channel}",
  "--reply-to",
  "{reply_to}",
  "--content",
  "-",
];

/** The default detectors. */
export const DEFAULT_PUBLISH_DETECTORS: readonly string[] = ["buzz"];

/** Default time bound of the fallback command. */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 30_000;

/** Resolved publish settings of an armed profile. */
export interface PublishSettings {
  detectors: string[];
  command: string[];
  stdin: boolean;
  timeoutMs: number;
  channelVar: string;
}

/** The settings when the profile is armed (by its table or by the flag), else null. */
export function publishSettings(
  table: PublishTable | undefined,
  armFlag: boolean,
): PublishSettings | null {
  if (!armFlag && table?.armed !== true) return null;
  const command = [...(table?.command ?? DEFAULT_PUBLISH_COMMAND)];
  const usesText = command.some((arg) => placeholdersIn(arg).includes("text"));
  return {
    detectors: [...(table?.detectors ?? DEFAULT_PUBLISH_DETECTORS)],
    command,
    stdin: table?.stdin ?? !usesText,
    timeoutMs: table?.timeout_ms ?? DEFAULT_PUBLISH_TIMEOUT_MS,
    channelVar: (table?.channel_var ?? "channel").toLowerCase(),
  };
}

/**
 * The detectors an armed profile names, looked up among those loaded; an unknown id is a
 * usage error before any agent starts.
 */
export function selectDetectors(
  settings: PublishSettings,
  loaded: readonly LoadedPublishDetector[],
  profile: string,
): LoadedPublishDetector[] {
  return settings.detectors.map((id) => {
    const found = loaded.find((d) => d.id === id);
    if (!found) {
      const known = loaded.map((d) => d.id).join(", ") || "none";
      throw new UsageError(
        `agent profile ${profile}: publish.detectors names unknown detector "${id}" (known: ${known})`,
      );
    }
    return found;
  });
}
