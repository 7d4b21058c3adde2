/**
 * The corpus transcript format: one JSON object per line; the first is the header, every
 * other line one event at `t` milliseconds after the agent was spawned. `dir` says where the
 * event happened: `c2a` a line the client sent the agent, `a2c` a line the agent sent the
 * client (both exactly as on the wire), `stderr` a line of the agent's stderr, `api` a request
 * the mock model API answered, `file` a file the agent wrote under HOME (`$HOME`-relative path,
 * size, content cut at 64 KiB), `meta` a note of the recorder.
 */
import { readFileSync } from "node:fs";
import * as v from "valibot";

/** One recorded event. */
export const TranscriptEventSchema = v.object({
  t: v.number(),
  dir: v.picklist(["c2a", "a2c", "stderr", "api", "file", "meta"]),
  line: v.string(),
});
export type TranscriptEvent = v.InferOutput<typeof TranscriptEventSchema>;

/** The first line of a transcript. */
export const TranscriptHeaderSchema = v.object({
  kind: v.literal("turnguard-corpus"),
  v: v.literal(1),
  agent: v.string(),
  pkg: v.string(),
  version: v.string(),
  scenario: v.string(),
  about: v.string(),
  recordedAt: v.string(),
  exit: v.nullable(v.object({ code: v.nullable(v.number()), signal: v.nullable(v.string()) })),
  note: v.optional(v.string()),
  home: v.string(),
});
export type TranscriptHeader = v.InferOutput<typeof TranscriptHeaderSchema>;

/** A file the agent wrote during the turn. */
export const RecordedFileSchema = v.object({
  path: v.string(),
  size: v.number(),
  content: v.string(),
});
export type RecordedFile = v.InferOutput<typeof RecordedFileSchema>;

/** A parsed transcript. */
export interface Transcript {
  header: TranscriptHeader;
  events: TranscriptEvent[];
}

/** Reads a transcript file; throws naming the file and line of the first bad line. */
export function readTranscript(path: string): Transcript {
  const lines = readFileSync(path, "utf8").split("\n").filter((l) => l !== "");
  const parse = <T>(schema: v.GenericSchema<unknown, T>, line: string, n: number): T => {
    const r = v.safeParse(schema, JSON.parse(line));
    if (!r.success) throw new Error(`${path}:${n}: ${r.issues[0].message}`);
    return r.output;
  };
  const header = parse(TranscriptHeaderSchema, lines[0] ?? "{}", 1);
  const events = lines.slice(1).map((l, i) => parse(TranscriptEventSchema, l, i + 2));
  return { header, events };
}
