/**
 * Declarative publish detectors (`[[detector]]` in anchors.toml): a literal command prefix
 * and the flags naming the channel, compiled into a plugin detector with the same API code
 * plugins use.
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { definePublishDetector, IdSchema, type PublishDetector } from "../plugin/api.ts";
import { detectCommand, type PublishCommandSpec } from "./commands.ts";
import { parseShell, programName } from "./shell_words.ts";

/** The words of a literal command prefix, when it is one simple command. */
function prefixWords(command: string): string[] | null {
  const pipelines = parseShell(command);
  if (pipelines.length !== 1 || pipelines[0].length !== 1) return null;
  const [only] = pipelines[0];
  return only.redirects.length === 0 && only.argv.length > 0 ? only.argv : null;
}

/** `[[detector]]` as written in anchors.toml. */
export const DeclarativeDetectorSchema = once(() =>
  v.strictObject({
    id: IdSchema(),
    /** The program and subcommand words a publish starts with, e.g. `"slack-post send"`. */
    command: v.pipe(
      v.string(),
      v.check((s) => prefixWords(s) !== null, "must be one command: a program and its words"),
    ),
    /** Flags whose value is the channel (default `["--channel"]`). */
    channel_flags: v.optional(
      v.array(v.pipe(v.string(), v.regex(/^-/, "a flag starts with -"))),
      ["--channel"],
    ),
  })
);
export type DeclarativeDetector = v.InferOutput<ReturnType<typeof DeclarativeDetectorSchema>>;

/** Compiles a `[[detector]]` table into a plugin detector. */
export function compileDetector(decl: DeclarativeDetector, origin?: string): PublishDetector {
  const [program, ...subcommand] = prefixWords(decl.command)!;
  const spec: PublishCommandSpec = {
    program: programName(program),
    subcommand,
    channelFlags: decl.channel_flags,
  };
  return definePublishDetector({
    id: decl.id,
    origin,
    detect: (call) => detectCommand(call, spec),
  });
}
