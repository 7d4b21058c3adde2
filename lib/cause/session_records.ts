/**
 * Session records: the files an agent writes per session (Claude Code's transcript, codex's
 * rollout file, gemini-cli's chat file), a source of a turn's truth beside the wire. A
 * profile names them with `session_records` patterns holding `{session}`; only the files
 * of the session the agent named on the wire are snapshotted when its prompt starts and
 * read for what the turn appended (the log scan's bounds: lib/cause/scan.ts), one JSON record a
 * line. Where each agent writes them, and in what format: docs/EVIDENCE.md.
 */
import { expandPatterns } from "../io/glob.ts";
import { ReadBudget } from "../io/bounded_read.ts";
import { type LogFs, nodeLogFs } from "../io/logfs.ts";
import { scanAppended } from "./scan.ts";
import { type Snapshot, takeSnapshot } from "./snapshot.ts";

/**
 * The default settle window: how long turnguard waits, after the agent answered a prompt,
 * for the turn's last records. Claude Code batches transcript writes behind a short flush
 * timer and writes after it answered; a clean turn pays this delay once (measured in
 * docs/BENCHMARKS.md).
 */
export const DEFAULT_SETTLE_MS = 100;

/** A session id turnguard puts into a path: no separators, no glob or dot tricks. */
const SAFE_SESSION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * The profile's record patterns for one session: templates expanded (lib/io/path_template.ts),
 * `{session}` by the id (`{session:N}` by its first N characters), `{cwd}` by the session's
 * working directory. An id that cannot safely name a file gives no patterns and a problem;
 * so does each template that cannot be expanded.
 */
export function recordPatterns(
  patterns: readonly string[],
  sessionId: string,
  env: Record<string, string | undefined>,
  cwd: string = process.cwd(),
): { patterns: string[]; problem: string | null } {
  if (patterns.length === 0) return { patterns: [], problem: null };
  if (!SAFE_SESSION.test(sessionId) || sessionId.includes("..")) {
    return {
      patterns: [],
      problem: `session id ${JSON.stringify(sessionId.slice(0, 80))} cannot name a session ` +
        `record file; its records were not read`,
    };
  }
  const expanded = expandPatterns(patterns, { env, cwd, session: sessionId });
  return {
    patterns: expanded.patterns,
    problem: expanded.problems.length > 0 ? expanded.problems.join("; ") : null,
  };
}

/** A session's record files as they were when a turn started. */
export interface RecordsSnapshot {
  sessionId: string;
  snapshot: Snapshot;
}

/** Snapshots the session's record files before its turn; never throws. */
export function snapshotSessionRecords(
  profile: { readonly sessionRecords?: readonly string[] },
  env: Record<string, string | undefined>,
  sessionId: string,
  now: number,
  fs: LogFs = nodeLogFs,
  cwd: string = process.cwd(),
): RecordsSnapshot {
  const { patterns, problem } = recordPatterns(profile.sessionRecords ?? [], sessionId, env, cwd);
  const snapshot = takeSnapshot(patterns, now, fs);
  if (problem) snapshot.diagnostics.push(problem);
  return { sessionId, snapshot };
}

/** One record of a session file, with where it starts. */
export interface SessionRecord {
  path: string;
  offset: number;
  record: unknown;
}

/** What a read of the turn's records gives. */
export interface RecordsRead {
  records: SessionRecord[];
  diagnostics: string[];
}

/**
 * The JSON records of a JSONL text: complete lines only (a last line without its newline
 * is still being written), a first line cut by the read window skipped, lines that are not
 * JSON counted.
 */
export function parseRecordLines(
  path: string,
  offset: number,
  text: string,
  cutAtStart: boolean,
): { records: SessionRecord[]; bad: number } {
  const records: SessionRecord[] = [];
  let bad = 0;
  let at = 0;
  let pos = offset;
  const encoder = new TextEncoder();
  let first = true;
  while (at < text.length) {
    const nl = text.indexOf("\n", at);
    if (nl === -1) break;
    const line = text.slice(at, nl);
    const start = pos;
    pos += encoder.encode(line).length + 1;
    at = nl + 1;
    if (first && cutAtStart) {
      first = false;
      continue;
    }
    first = false;
    if (line.trim() === "") continue;
    try {
      records.push({ path, offset: start, record: JSON.parse(line) });
    } catch {
      bad++;
    }
  }
  return { records, bad };
}

/** The session a record names in its own fields (`sessionId`, `session_id`), if any. */
export function namedSession(record: unknown): string | null {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return null;
  const r = record as Record<string, unknown>;
  const id = r.sessionId ?? r.session_id;
  return typeof id === "string" ? id : null;
}

/**
 * Reads the records the turn appended to its session's files, oldest file first, through
 * the bounded reader within the turn's `budget` (so the records kept are bounded by its
 * bytes). A file whose records name another session is not read further (a
 * `{session:N}` prefix matched another session's file).
 */
export async function readSessionRecords(
  taken: RecordsSnapshot,
  startedAt: number,
  budget: ReadBudget = new ReadBudget(),
  fs: LogFs = nodeLogFs,
): Promise<RecordsRead> {
  const { snapshot, sessionId } = taken;
  const diagnostics = [...snapshot.diagnostics];
  if (snapshot.patterns.length === 0) return { records: [], diagnostics };
  const scan = await scanAppended(snapshot, startedAt, budget, fs);
  diagnostics.push(...scan.diagnostics.filter((d) => !d.includes("does not exist")));
  const records: SessionRecord[] = [];
  for (const chunk of [...scan.chunks].reverse()) {
    const before = snapshot.files.get(chunk.path);
    const from = chunk.reason === "grew" || chunk.reason === "moved" ? before?.size ?? 0 : 0;
    const parsed = parseRecordLines(chunk.path, chunk.offset, chunk.text, chunk.offset > from);
    if (parsed.bad > 0) {
      diagnostics.push(`session records ${chunk.path}: ${parsed.bad} line(s) are not JSON`);
    }
    const foreign = parsed.records.map((r) => namedSession(r.record)).find((id) =>
      id !== null && id !== sessionId
    );
    if (foreign !== undefined) {
      diagnostics.push(
        `session records ${chunk.path} belong to session ${foreign}, not ${sessionId}: not read`,
      );
      continue;
    }
    records.push(...parsed.records);
  }
  return { records, diagnostics };
}
