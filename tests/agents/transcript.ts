/**
 * The corpus transcript format: one JSON object per line; the first is the header, every
 * other line one event at `t` milliseconds after the agent was spawned. `dir` says where the
 * event happened: `c2a` a line the client sent the agent, `a2c` a line the agent sent the
 * client (both exactly as on the wire), `stderr` a line of the agent's stderr, `api` a request
 * the mock model API answered, `file` a file the agent wrote under HOME (`$HOME`-relative path,
 * size, content cut at 128 KiB), `meta` a note of the recorder.
 *
 * Transcripts whose header says `files: "writes"` hold the files write by write: each `file`
 * event is what the agent wrote since the recorder last looked (the lines it appended, with
 * `append`, or the whole file it rewrote), at the time the recorder saw it — before the ACP
 * line the agent sent next. Older transcripts hold each file once, in its final state, at its
 * last modification time.
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
  /** `writes`: the `file` events are the agent's writes as they happened (see above). */
  files: v.optional(v.literal("writes")),
});
export type TranscriptHeader = v.InferOutput<typeof TranscriptHeaderSchema>;

/** A file the agent wrote during the turn. */
export const RecordedFileSchema = v.object({
  path: v.string(),
  /** The file's size after this write (the content may be shortened). */
  size: v.number(),
  content: v.string(),
  /** The content was appended to the file (absent: it is the whole file). */
  append: v.optional(v.boolean()),
});

/** The `meta` event of the moment the client closed the agent's stdin. */
export const STDIN_CLOSED = "the client closed stdin";
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
