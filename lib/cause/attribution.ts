/**
 * Attribution: glog lines carry the writing process id
 * (`E0707 08:34:23.910604  84 log.go:398] ...`: pid 84). When some of a turn's log lines
 * carry the agent's pid, lines of other pids belong to other agents sharing the log
 * directory and are dropped, so a concurrent agent can never lend this turn its error.
 */

/** A glog header anywhere in a line (agy prefixes some with "logging before google.Init:"). */
export const GLOG_HEADER = /\b[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+(\d+)\s+[^\s\]]+:\d+\]/;

/** One log line and where it starts. */
export interface LogLine {
  path: string;
  offset: number;
  text: string;
}

/** Splits a chunk into lines with their file offsets (byte offsets, UTF-8). */
export function splitLines(path: string, offset: number, text: string): LogLine[] {
  const lines: LogLine[] = [];
  const encoder = new TextEncoder();
  let pos = offset;
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.length > 0) lines.push({ path, offset: pos, text: line });
    pos += encoder.encode(raw).length + 1;
  }
  return lines;
}

/** The pid a glog line names, or null for a line without a header. */
export function linePid(text: string): number | null {
  const m = GLOG_HEADER.exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * Keeps the lines written by `pid`. Continuation lines (no header) belong to the header
 * before them in the same file. When no line carries `pid`, every line is kept and a
 * diagnostic says attribution was not possible.
 */
export function attributeLines(
  lines: readonly LogLine[],
  pid: number,
): { lines: LogLine[]; diagnostic: string | null } {
  const owners: (number | null)[] = [];
  let current: number | null = null;
  let path: string | null = null;
  let anyPid = false;
  let ours = false;
  for (const line of lines) {
    if (line.path !== path) current = null, path = line.path;
    const p = linePid(line.text);
    if (p !== null) current = p, anyPid = true, ours ||= p === pid;
    owners.push(current);
  }
  if (!anyPid) return { lines: [...lines], diagnostic: null };
  if (!ours) {
    return {
      lines: [...lines],
      diagnostic: `no log line carries the agent's pid ${pid}; lines of every process were scanned`,
    };
  }
  return { lines: lines.filter((_, i) => owners[i] === pid), diagnostic: null };
}
