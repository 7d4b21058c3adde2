/**
 * The recording format (`turnguard proxy --record FILE`, `turnguard replay FILE`, and the
 * project's corpus of real agents): one JSON object per line; the first is the header, every
 * other line one event at `t` milliseconds after the agent was spawned. `dir` says where the
 * event happened: `c2a` a line the client sent the agent, `a2c` a line the agent sent the
 * client (both exactly as on the wire), `stderr` a line of the agent's stderr, `api` a request
 * a mock model API answered (corpus only), `file` a file the agent wrote under HOME
 * (`$HOME`-relative path, size, content cut at 128 KiB), `meta` a note of the recorder.
 *
 * Recordings whose header says `files: "writes"` hold the files write by write: each `file`
 * event is what the agent wrote since the recorder last looked (the lines it appended, with
 * `append`, or the whole file it rewrote), at the time the recorder saw it — before the ACP
 * line the agent sent next. Older ones hold each file once, in its final state, at its last
 * modification time.
 */
import { readFileSync, statSync } from "node:fs";
import * as v from "valibot";
import { once } from "../once.ts";
import { EXIT, TurnguardError } from "../errors.ts";

/** One recorded event. */
export const TranscriptEventSchema = once(() =>
  v.object({
    t: v.number(),
    dir: v.picklist(["c2a", "a2c", "stderr", "api", "file", "meta"]),
    line: v.string(),
  })
);
export type TranscriptEvent = v.InferOutput<ReturnType<typeof TranscriptEventSchema>>;

/** The first line of a recording. */
export const TranscriptHeaderSchema = once(() =>
  v.object({
    kind: v.literal("turnguard-corpus"),
    v: v.literal(1),
    /** The agent: its command's basename (the corpus: the package's short name). */
    agent: v.string(),
    /** The package or command recorded. */
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
    /** The turnguard profile the recording was made under (`proxy --record`). */
    profile: v.optional(v.string()),
    /** The agent's working directory (`{cwd}` in the profile's path templates). */
    cwd: v.optional(v.string()),
  })
);
export type TranscriptHeader = v.InferOutput<ReturnType<typeof TranscriptHeaderSchema>>;

/** A file the agent wrote during the turn. */
export const RecordedFileSchema = once(() =>
  v.object({
    path: v.string(),
    /** The file's size after this write (the content may be shortened). */
    size: v.number(),
    content: v.string(),
    /** The content was appended to the file (absent: it is the whole file). */
    append: v.optional(v.boolean()),
  })
);
export type RecordedFile = v.InferOutput<ReturnType<typeof RecordedFileSchema>>;

/** The `meta` event of the moment the client closed the agent's stdin. */
export const STDIN_CLOSED = "the client closed stdin";

/** A parsed recording. */
export interface Transcript {
  header: TranscriptHeader;
  events: TranscriptEvent[];
}

/** The largest recording read (the file is read whole). */
export const MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024;

/** A recording that cannot be read: what and where (file, line). */
export class TranscriptError extends TurnguardError {
  constructor(path: string, line: number | null, detail: string) {
    super(`${path}${line !== null ? `:${line}` : ""}: ${detail}`, EXIT.usage);
  }
}

/** Parses a recording's text; throws TranscriptError naming the line of the first bad one. */
export function parseTranscript(path: string, text: string): Transcript {
  const lines = text.split("\n");
  const parse = <T>(schema: v.GenericSchema<unknown, T>, line: string, n: number): T => {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new TranscriptError(path, n, "not a JSON line");
    }
    const r = v.safeParse(schema, json);
    if (!r.success) {
      const key = (r.issues[0].path ?? []).map((p) => String(p.key)).join(".");
      throw new TranscriptError(path, n, `${key ? `${key}: ` : ""}${r.issues[0].message}`);
    }
    return r.output;
  };
  if ((lines[0] ?? "") === "") throw new TranscriptError(path, 1, "empty: no header line");
  const header = parse(TranscriptHeaderSchema(), lines[0], 1);
  const events: TranscriptEvent[] = [];
  lines.forEach((l, i) => {
    if (i > 0 && l !== "") events.push(parse(TranscriptEventSchema(), l, i + 1));
  });
  return { header, events };
}

/** Reads a recording file; throws TranscriptError (unreadable, too large, a bad line). */
export function readTranscript(path: string): Transcript {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_TRANSCRIPT_BYTES) {
      throw new TranscriptError(path, null, `larger than ${MAX_TRANSCRIPT_BYTES} bytes`);
    }
    text = readFileSync(path, "utf8");
  } catch (err) {
    if (err instanceof TranscriptError) throw err;
    const code = (err as { code?: string }).code ?? String(err);
    throw new TranscriptError(path, null, `cannot read the recording (${code})`);
  }
  return parseTranscript(path, text);
}
