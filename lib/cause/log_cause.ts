/**
 * The turn's log cause: snapshot before the turn, then read what it appended (readTurnLogs,
 * asynchronous, within the turn's read budget), keep the
 * agent's own lines, find the terminal cause with the profile's anchors and classify it.
 * Shared by `turnguard run` and `turnguard proxy`.
 */
import { findCause } from "./anchors.ts";
import { attributeLines, type LogLine, splitLines } from "./attribution.ts";
import { classify } from "./classify.ts";
import { buildCause, type Cause } from "../core/cause.ts";
import { expandPatterns } from "../io/glob.ts";
import { ReadBudget } from "../io/bounded_read.ts";
import { type LogFs, nodeLogFs } from "../io/logfs.ts";
import type { Classifier } from "./classifier.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import { scanAppended, type ScanResult } from "./scan.ts";
import { type Snapshot, takeSnapshot } from "./snapshot.ts";

/** Where a profile's agent logs, as the log reader needs it (lib/config/config.ts's Profile). */
export interface LogSources {
  /** Log path templates (lib/io/path_template.ts; `*`, `?`). */
  logs: readonly string[];
  /** `glog` lines carry the writer's pid, so a turn's lines can be told from others'. */
  logFormat: "plain" | "glog";
}

/**
 * Snapshots the profile's logs before a turn starts. `cwd` is the agent's working directory
 * (`{cwd}` in a pattern); a pattern that cannot be expanded is a diagnostic.
 */
export function snapshotProfileLogs(
  profile: LogSources,
  env: Record<string, string | undefined>,
  now: number,
  fs: LogFs = nodeLogFs,
  cwd: string = process.cwd(),
): Snapshot {
  const { patterns, problems } = expandPatterns(profile.logs, { env, cwd });
  const snapshot = takeSnapshot(patterns, now, fs);
  snapshot.diagnostics.push(...problems);
  return snapshot;
}

/** What the log scan found for one turn. */
export interface LogCauseResult {
  cause: Cause | null;
  diagnostics: string[];
}

/**
 * Reads what the turn appended to the profile's logs (lib/cause/scan.ts), within the turn's
 * read budget, on the runtime's thread pool; findLogCause then decides on it.
 */
export function readTurnLogs(
  profile: LogSources,
  snapshot: Snapshot,
  spawnedAt: number,
  budget: ReadBudget = new ReadBudget(),
  fs: LogFs = nodeLogFs,
): Promise<ScanResult> {
  if (profile.logs.length === 0) return Promise.resolve({ chunks: [], diagnostics: [] });
  return scanAppended(snapshot, spawnedAt, budget, fs);
}

/** Everything findLogCause needs besides the snapshot. */
export interface LogCauseInput {
  snapshot: Snapshot;
  /** What the turn appended to the logs (readTurnLogs). */
  scan: ScanResult;
  /** The agent's pid, for glog attribution; null when unknown. */
  pid: number | null;
  profile: LogSources;
  /** The profile's classifier (log anchors find the cause, text anchors classify it). */
  classifier: Classifier;
  now: number;
}

/**
 * Finds, in the turn's appended log bytes (read by readTurnLogs), the classified terminal
 * cause. Synchronous, like the code plugins it may call. Code
 * plugins share one budget for it (the turn's, when the caller opened one).
 */
export function findLogCause(input: LogCauseInput): LogCauseResult {
  return withPluginBudget(() => logCause(input));
}

function logCause(input: LogCauseInput): LogCauseResult {
  const { snapshot, scan, pid, profile, classifier, now } = input;
  const diagnostics = [...snapshot.diagnostics];
  if (profile.logs.length === 0) return { cause: null, diagnostics };
  diagnostics.push(...scan.diagnostics);
  // Oldest file first, so among equal anchors the newest file's last line wins.
  let lines: LogLine[] = [...scan.chunks].reverse().flatMap((c) =>
    splitLines(c.path, c.offset, c.text)
  );
  if (profile.logFormat === "glog" && pid !== null && lines.length > 0) {
    const attributed = attributeLines(lines, pid);
    lines = attributed.lines;
    if (attributed.diagnostic) diagnostics.push(attributed.diagnostic);
  }
  const found = findCause(classifier, lines.map((l) => ({ kind: "log" as const, line: l.text })));
  diagnostics.push(...found.diagnostics);
  if (!found.finding) {
    if (scan.chunks.length > 0) {
      diagnostics.push(
        `${scan.chunks.length} log file(s) grew during the turn but no anchor matched: ${
          scan.chunks.map((c) => c.path).join(", ")
        }`,
      );
    }
    return { cause: null, diagnostics };
  }
  const { hit, anchor, index } = found.finding;
  const line = lines[index];
  const { category, retry } = classify(hit.cause, hit, classifier, now, diagnostics);
  return {
    cause: buildCause({
      code: hit.code ?? codeIn(hit.cause),
      message: hit.cause,
      category,
      anchor: anchor.id,
      source: { path: line.path, offset: line.offset },
      retry,
    }),
    diagnostics,
  };
}

/** A status code written in the cause (`(code 429)`, `HTTP 503`), when there is one. */
export function codeIn(text: string): number | null {
  const m = text.match(/\(code (\d{3})\)|\bHTTP[ /](?:\d\.\d )?(\d{3})\b|\bstatus[ =:]+(\d{3})\b/i);
  return m ? Number(m[1] ?? m[2] ?? m[3]) : null;
}

/**
 * Why a turn with no answer and no error is `empty`, and where turnguard looked: said with
 * `-v` so that a custom agent's silent failure is never silent twice. Pure: what the turn
 * left is passed in.
 */
export function emptyTurnNote(looked: {
  profile: string;
  /** The log patterns the profile names, expanded. */
  patterns: readonly string[];
  /** What the turn appended to them. */
  scan: ScanResult;
  /** The bytes of the agent's stderr kept (its tail). */
  stderrBytes: number;
}): string {
  const logs = looked.patterns.length === 0
    ? `profile ${looked.profile} names no log files (a profile's \`logs\` lets turnguard read them)`
    : looked.scan.chunks.length === 0
    ? `no log file grew during the turn (${looked.patterns.join(", ")})`
    : `${looked.scan.chunks.length} log file(s) grew but no line logged at error level named a cause (${
      looked.scan.chunks.map((c) => c.path).join(", ")
    })`;
  const stderr = looked.stderrBytes === 0
    ? "stderr was empty"
    : `stderr held ${looked.stderrBytes} byte(s) with no failure in them`;
  return `empty: the agent exited 0 with no output; ${stderr}; ${logs}`;
}
