/**
 * Journal records: the schema of one journal line (defined once, types derived), and how a
 * line is written and read back — including a record glued behind a torn one.
 */
import * as v from "valibot";
import { AgentAttemptSchema, OutcomeSchema } from "../core/outcome.ts";
import { once } from "../once.ts";
import { redactedJson } from "../text/redact.ts";

/**
 * The turnguard process that owns a turn, and who that pid was: `turnguard retry` signals
 * it, `turnguard wait` checks that it still runs.
 */
export const OwnerSchema = once(() =>
  v.object({
    pid: v.number(),
    /**
     * The owner's start time (Linux: field 22 of /proc/PID/stat), so that a later process
     * that reuses the pid is not taken for the owner. Absent where it cannot be read.
     */
    pidStart: v.optional(v.string()),
    /**
     * Where `pid` is valid: the host's boot id and the pid namespace. A reader elsewhere
     * (another host or container) does not look the pid up. Absent where it cannot be read.
     */
    pidSpace: v.optional(v.string()),
  })
);
/** The owner of a turn as recorded (derived from OwnerSchema). */
export type Owner = v.InferOutput<ReturnType<typeof OwnerSchema>>;

/** Fields every record carries: when, whose, which turn, and the owning process. */
const commonEntries = () => ({
  /** ISO time the record was written. */
  ts: v.string(),
  /** The human label of the session (`--name`, else the agent profile's name). */
  name: v.string(),
  session: v.string(),
  turn: v.number(),
  ...OwnerSchema().entries,
  /**
   * A random id the writing process drew once: with `session` and `turn` it names one turn,
   * also when a later process serves the same session id and numbers its turns from 1 again.
   * Absent in records of older versions (the owner's pid, start time and space stand in).
   */
  writer: v.optional(v.string()),
});

/** Why a retry decision is final. */
export const SettledWhySchema = v.picklist([
  "succeeded",
  "stopped",
  "off",
  "not_retryable",
  "exhausted",
]);
/** Why a retry decision is final (derived from SettledWhySchema). */
export type SettledWhy = v.InferOutput<typeof SettledWhySchema>;

/** A turn began: the client's prompt (proxy) or the command (run) was started. */
export const TurnStartedSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("turn_started"),
    mode: v.picklist(["run", "proxy"]),
    agent: v.string(),
    /** The JSON-RPC id of the client's `session/prompt` (proxy); null in run mode. */
    promptId: v.nullable(v.union([v.string(), v.number()])),
  })
);

/** One attempt of a turn ended; `attempt` is 0 for the first try, k for the k-th retry. */
export const TurnEndedSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("turn_ended"),
    attempt: v.number(),
    outcome: OutcomeSchema(),
    /** The outcome's `reply.text` was cut to its first JOURNAL_REPLY_BYTES bytes. */
    replyTruncated: v.optional(v.literal(true)),
  })
);

/**
 * An attempt's Outcome, revised after its end was journaled: the agent's session records
 * showed the turn's end only after `records_wait_ms` (docs/EVIDENCE.md "The turn's end"),
 * and read differently from what the client was answered by. `revision` counts from 1; the
 * last one is the turn's Outcome.
 */
export const TurnRevisedSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("turn_revised"),
    attempt: v.number(),
    revision: v.pipe(v.number(), v.integer(), v.minValue(1)),
    outcome: OutcomeSchema(),
    /** The outcome's `reply.text` was cut to its first JOURNAL_REPLY_BYTES bytes. */
    replyTruncated: v.optional(v.literal(true)),
  })
);

/** Retry number `attempt` (of `of`) waits until `nextAt`; written before the failed end. */
export const RetryScheduledSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("retry_scheduled"),
    attempt: v.number(),
    of: v.number(),
    afterMs: v.number(),
    nextAt: v.string(),
    /** What the retry waits out: `capacity`, `rate limit`, `network`, `quota`. */
    reason: v.string(),
  })
);

/** Retry number `attempt` began running. */
export const RetryStartedSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("retry_started"),
    attempt: v.number(),
    of: v.number(),
  })
);

/**
 * The retry decision is final. `attempt` is the last attempt that ran (0 for the first
 * try); written before that attempt's end, or when a waiting retry is stopped.
 */
export const RetrySettledSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("retry_settled"),
    attempt: v.number(),
    of: v.number(),
    why: SettledWhySchema,
    /** A readable reason: `auth: not retryable`, `retries are off`, `2 of 2 retries used`. */
    reason: v.string(),
  })
);

/**
 * The agent failed an attempt inside the running turn and (usually) tries again: progress
 * `wait` and `log` show while the turn runs (see AgentAttemptSchema).
 */
export const AgentAttemptRecordSchema = once(() =>
  v.object({
    ...commonEntries(),
    event: v.literal("agent_attempt"),
    ...AgentAttemptSchema().entries,
  })
);

/** One journal line. */
export const JournalRecordSchema = once(() =>
  v.variant("event", [
    TurnStartedSchema(),
    TurnEndedSchema(),
    RetryScheduledSchema(),
    RetryStartedSchema(),
    RetrySettledSchema(),
    AgentAttemptRecordSchema(),
    TurnRevisedSchema(),
  ])
);
/** One journal line (derived from JournalRecordSchema). */
export type JournalRecord = v.InferOutput<ReturnType<typeof JournalRecordSchema>>;
/** A `retry_scheduled` record (derived from RetryScheduledSchema). */
export type RetryScheduled = v.InferOutput<ReturnType<typeof RetryScheduledSchema>>;
/** A `retry_started` record (derived from RetryStartedSchema). */
export type RetryStarted = v.InferOutput<ReturnType<typeof RetryStartedSchema>>;
/** An `agent_attempt` record (derived from AgentAttemptRecordSchema). */
export type AgentAttemptRecord = v.InferOutput<ReturnType<typeof AgentAttemptRecordSchema>>;
/** A `turn_revised` record (derived from TurnRevisedSchema). */
export type TurnRevised = v.InferOutput<ReturnType<typeof TurnRevisedSchema>>;
/** A `retry_settled` record (derived from RetrySettledSchema). */
export type RetrySettled = v.InferOutput<ReturnType<typeof RetrySettledSchema>>;

/** Every line starts with this; a record glued behind a torn line is found by it. */
const RECORD_START = '{"ts":"';

/**
 * A journaled reply keeps at most its first this many bytes, so one record stays small
 * whatever the agent printed (the Outcome given to the caller keeps its own text).
 */
export const JOURNAL_REPLY_BYTES = 64 * 1024;

/** Serializes a record as one line, `ts` first so a glued record can be found again. */
export function formatRecord(record: JournalRecord): string {
  const { ts, ...rest } = v.parse(JournalRecordSchema(), record);
  return redactedJson({ ts, ...rest }) + "\n";
}

/** A parsed line: the record, or why it was skipped. */
export type ParsedLine = { record: JournalRecord } | { error: string };

/** Parses one line (without its newline) into a record. */
export function parseRecordLine(line: string): ParsedLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    return { error: `not JSON (${(err as Error).message.split("\n")[0]})` };
  }
  const result = v.safeParse(JournalRecordSchema(), raw);
  if (result.success) return { record: result.output };
  const issue = result.issues[0];
  const path = (issue.path ?? []).map((p) => String(p.key)).join(".");
  return { error: `not a journal record (${path ? `${path}: ` : ""}${issue.message})` };
}

/**
 * Parses one line, recovering records glued behind a torn one: a write cut short leaves a
 * line without its newline, and the next record lands on the same line.
 */
export function parseLineRecovering(line: string): RecoveredLine {
  const whole = parseRecordLine(line);
  if ("record" in whole) return { records: [whole.record], error: null, torn: [] };
  for (let at = line.indexOf(RECORD_START, 1); at !== -1; at = line.indexOf(RECORD_START, at + 1)) {
    const rest = parseLineRecovering(line.slice(at));
    if (rest.records.length > 0) {
      const head = readHead(line.slice(0, at));
      return {
        records: rest.records,
        error: `skipped a torn record (the record glued behind it at column ${at + 1} was kept)`,
        torn: head?.event ? [head, ...rest.torn] : rest.torn,
      };
    }
  }
  const head = readHead(line);
  return {
    records: [],
    error: `skipped a corrupt line: ${whole.error}`,
    torn: head?.event ? [head] : [],
  };
}

/** A line read back: its records, why a part was skipped, and whose records were torn. */
export interface RecoveredLine {
  records: JournalRecord[];
  error: string | null;
  /** The heads of skipped records that still name their turn and event. */
  torn: RecordHead[];
}

/**
 * What a record's first fields say — its turn and event — read from the line's start
 * without parsing the rest. It names the turn of a record cut short (a full disk), and lets
 * a reader pass over the records of turns it does not show without parsing them.
 */
export interface RecordHead extends Owner {
  ts: string;
  name: string;
  session: string;
  turn: number;
  /** Who wrote it (see `writerKey`). */
  writer: string;
  /** Null when the line was cut before its event. */
  event: string | null;
}

/** A JSON string, escapes included: linear on any input (the alternatives are disjoint). */
const JSON_STRING = String.raw`"(?:[^"\\]|\\.)*"`;
/** A head is looked for in this many first characters of a line (longer ones are parsed). */
const HEAD_CHARS = 8192;
/** The fields every record starts with, in the order `formatRecord` writes them. */
const HEAD = new RegExp(
  String.raw`^\{"ts":(${JSON_STRING}),"name":(${JSON_STRING}),"session":(${JSON_STRING}),` +
    String.raw`"turn":(\d{1,15}),"pid":(\d{1,15})(?:,"pidStart":(${JSON_STRING}))?` +
    String.raw`(?:,"pidSpace":(${JSON_STRING}))?(?:,"writer":(${JSON_STRING}))?` +
    String.raw`(?:,"event":"([a-z_]{1,40})")?`,
);

/**
 * The head of a line as `formatRecord` writes it, or null when the line does not start so
 * (another writer, or cut before its owner). Only a filter: what it lets through is parsed.
 */
export function readHead(line: string): RecordHead | null {
  const m = HEAD.exec(line.length > HEAD_CHARS ? line.slice(0, HEAD_CHARS) : line);
  if (m === null) return null;
  const str = (s: string) => JSON.parse(s) as string;
  const optional = (s: string | undefined) => (s === undefined ? undefined : str(s));
  const [, ts, name, session, turn, pid, pidStart, pidSpace, writer, event] = m;
  const owner = { pid: Number(pid), pidStart: optional(pidStart), pidSpace: optional(pidSpace) };
  return {
    ts: str(ts),
    name: str(name),
    session: str(session),
    turn: Number(turn),
    ...owner,
    writer: writerKey({ ...owner, writer: optional(writer) }),
    event: event ?? null,
  };
}

/**
 * Who wrote a record: its `writer` id, or for records without one its owner's pid, start
 * time and pid space.
 */
export function writerKey(r: Owner & { writer?: string }): string {
  return r.writer ?? `${r.pid}/${r.pidStart ?? ""}/${r.pidSpace ?? ""}`;
}

/**
 * The key of one turn: session, number and writer. A turn number alone is a per-process
 * counter: a later process that serves the same session id counts from 1 again.
 */
export function turnKey(r: { session: string; turn: number; writer: string }): string {
  return `${r.session}\n${r.turn}\n${r.writer}`;
}
