/**
 * `turnguard scan [--agent NAME] [--config PATH] [--kind K] [--json] FILE...|-`: runs the
 * anchors over whole files (or stdin), line by line, and prints every finding — anchor,
 * category, retry hint, file:line and cause — then the line a turn would report (the
 * matcher's winner over the whole file). For plugin authors testing against their own logs.
 * Each line gets its own code plugin budget, so a file of any size is scanned to its end.
 * With `--kind records --agent NAME`, reads agent session record files with the profile's
 * record readers instead (every event, then what the file's last turn shows).
 * Exit 0 when something was found, 1 when nothing was, 2 on a usage or config error.
 */
import { resolve } from "node:path";
import { findCause, type Finding } from "../cause/anchors.ts";
import { buildClassifier, type Classifier } from "../cause/classifier.ts";
import { classify } from "../cause/classify.ts";
import { errorText, UsageError } from "../errors.ts";
import { readStdin, readWholeFile } from "../io/bounded_read.ts";
import { pickWinner } from "../cause/explain.ts";
import { isObject } from "../text/json.ts";
import type { RetryHint } from "../core/outcome.ts";
import type { AnchorInput, LoadedRecordReader, RecordEvent } from "../plugin/api.ts";
import { type Cause, weighRecords } from "../core/decide.ts";
import { foldRecordEvents, readRecordEvents, recordFacts } from "../cause/record_evidence.ts";
import { parseRecordLines } from "../cause/session_records.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import {
  loadRegistry,
  profileClassifier,
  profileReaders,
  type Registry,
  requireProfile,
} from "../config/registry.ts";
import { envRecord, type OptionSpec, parseOptions } from "./args.ts";
import { stdoutSink, warnLine, writeShown } from "../io/output.ts";

/** How the lines of a file are read as anchor inputs. */
export const INPUT_KINDS = ["auto", "log", "text", "error", "records"] as const;
/** One of INPUT_KINDS: how `--kind` reads lines. */
export type InputKind = (typeof INPUT_KINDS)[number];

/** The flags `scan` and `explain` share. */
export const SCAN_OPTIONS = {
  agent: { type: "string" },
  config: { type: "string" },
  kind: { type: "string" },
  json: { type: "boolean" },
} satisfies OptionSpec;

/** A JSON-RPC error object: `{code, message, data?}`. */
function asError(value: unknown): Extract<AnchorInput, { kind: "error" }>["error"] | null {
  if (!isObject(value) || !("message" in value)) return null;
  return { code: value.code ?? null, message: value.message, data: value.data };
}

/**
 * Reads one line as an anchor input. `auto`: a JSON-RPC response with `error` (or a bare
 * `{code, message}` error) is an error input, a `session/update` agent message chunk is a
 * text input, anything else a log line.
 */
export function lineInput(line: string, kind: InputKind): AnchorInput {
  if (kind === "log") return { kind: "log", line };
  if (kind === "text") return { kind: "text", text: line };
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    if (kind === "error") return { kind: "error", error: { code: null, message: line } };
    return { kind: "log", line };
  }
  const error = asError(isObject(parsed) && "error" in parsed ? parsed.error : parsed);
  if (error) return { kind: "error", error };
  if (kind === "error") return { kind: "error", error: { code: null, message: line } };
  const update = isObject(parsed) && isObject(parsed.params) ? parsed.params.update : undefined;
  if (
    isObject(update) && update.sessionUpdate === "agent_message_chunk" &&
    isObject(update.content) && typeof update.content.text === "string"
  ) {
    return { kind: "text", text: update.content.text };
  }
  return { kind: "log", line };
}

/** Parses `--kind`. */
export function parseKind(value: string | undefined): InputKind {
  if (value === undefined) return "auto";
  if ((INPUT_KINDS as readonly string[]).includes(value)) return value as InputKind;
  throw new UsageError(`--kind ${value}: expected one of ${INPUT_KINDS.join(", ")}`);
}

/** The classifier a command uses: the profile's with `--agent`, else one of every anchor. */
export function commandClassifier(registry: Registry, agent: string | undefined): Classifier {
  if (agent === undefined) return buildClassifier(registry.anchors);
  return profileClassifier(registry, requireProfile(registry, agent));
}

/** One finding as `scan --json` prints it. */
export interface ScanFinding {
  file: string;
  line: number;
  kind: AnchorInput["kind"];
  anchor: string;
  origin: string | null;
  category: string;
  code: number | string | null;
  retry: RetryHint;
  cause: string;
}

/** What scanning one file's lines found: every finding, and the line a turn would report. */
export interface FileScan {
  findings: ScanFinding[];
  /** The matcher's winner over all the file's lines (the turn's cause); null: none. */
  turnCause: { line: number; anchor: string } | null;
  diagnostics: string[];
}

/**
 * Scans the lines of one text with a classifier; pure but for the anchors' own code. Each line
 * is matched (and its cause classified) once, under a plugin budget of its own; the turn's
 * line is picked from those per-line findings by the matcher's rule (pickWinner), so no
 * anchor runs twice on a line.
 */
export function scanText(
  file: string,
  text: string,
  classifier: Classifier,
  kind: InputKind,
  now: number,
): FileScan {
  const diagnostics: string[] = [];
  const lines = text.split(/\r?\n/);
  const numbered = lines
    .map((line, i) => ({ line, number: i + 1 }))
    .filter(({ line }) => line.trim() !== "");
  const inputs = numbered.map(({ line }) => lineInput(line, kind));
  const findings: ScanFinding[] = [];
  const matches: Finding[] = [];
  inputs.forEach((input, i) =>
    withPluginBudget(() => {
      const found = findCause(classifier, [input]);
      diagnostics.push(...found.diagnostics);
      if (!found.finding) return;
      const { hit, anchor } = found.finding;
      matches.push({ ...found.finding, index: i });
      const { category, retry } = classify(hit.cause, hit, classifier, now, diagnostics);
      findings.push({
        file,
        line: numbered[i].number,
        kind: input.kind,
        anchor: anchor.id,
        origin: anchor.origin ?? null,
        category,
        code: hit.code ?? null,
        retry,
        cause: hit.cause,
      });
    })
  );
  const winner = pickWinner(classifier.candidates(inputs.map((i) => i.kind)), matches);
  const turnCause = winner
    ? { line: numbered[winner.index].number, anchor: winner.anchor.id }
    : null;
  return { findings, turnCause, diagnostics: [...new Set(diagnostics)] };
}

/** What `scan --kind records` found in one session record file. */
export interface RecordsScan {
  events: Array<{ file: string; line: number; reader: string; event: RecordEvent }>;
  /** The reading of the file's last turn (after its last prompt), as the proxy decides it. */
  lastTurn: { cut: Cause | null; stop: string | null; recovered: boolean };
  diagnostics: string[];
}

/**
 * Reads a whole session record file (Claude Code transcript, codex rollout, gemini-cli
 * chat file) with the profile's record readers: every event, then what its last turn
 * shows (docs/EVIDENCE.md).
 */
export function scanRecords(
  file: string,
  text: string,
  readers: readonly LoadedRecordReader[],
  classifier: Classifier,
  now: number,
): RecordsScan {
  const diagnostics: string[] = [];
  const { records, bad } = parseRecordLines(
    file,
    0,
    text.endsWith("\n") ? text : text + "\n",
    false,
  );
  if (bad > 0) diagnostics.push(`${file}: ${bad} line(s) are not JSON`);
  const lineOf = new Map<number, number>();
  let line = 1;
  let offset = 0;
  const encoder = new TextEncoder();
  for (const piece of text.split("\n")) {
    lineOf.set(offset, line++);
    offset += encoder.encode(piece).length + 1;
  }
  const read = withPluginBudget(() => readRecordEvents(records, readers, diagnostics));
  const verdict = foldRecordEvents(read);
  // Weighed as decide weighs them (its notes, such as a dropped answer, as diagnostics).
  const causes = weighRecords(recordFacts(verdict, classifier, now, diagnostics), diagnostics);
  return {
    events: read.map((e) => ({
      file,
      line: lineOf.get(e.offset) ?? 0,
      reader: e.reader,
      event: e.event,
    })),
    lastTurn: {
      cut: causes.cut ?? causes.unanswered ?? causes.stop?.cause ?? null,
      stop: causes.stop?.stopReason ?? null,
      recovered: verdict.recovered,
    },
    diagnostics,
  };
}

/** One record event as a line of text. */
function formatEvent(e: RecordsScan["events"][number]): string {
  const ev = e.event;
  const words = ev.kind === "error"
    ? `${ev.retrying ? "(retrying) " : ""}${ev.cause}`
    : ev.kind === "stop"
    ? `${ev.stopReason}${ev.cause ? `: ${ev.cause}` : ""}`
    : ev.kind === "aborted"
    ? ev.cause
    : ev.kind === "reply"
    ? `${ev.final ? "final " : ""}${(ev.text ?? "").slice(0, 60)}`
    : ev.kind === "usage"
    ? `${ev.output} output token(s)`
    : "";
  return `${e.file}:${e.line}: ${e.reader} ${ev.kind}${words ? ` ${words}` : ""}`;
}

/** The last turn's reading as a line of text. */
function formatLastTurn(file: string, r: RecordsScan): string {
  const { cut, stop, recovered } = r.lastTurn;
  if (cut) {
    return `${file}: the last turn was cut${
      stop ? ` (${stop})` : ""
    }: [${cut.error.category}] ${cut.error.message}`;
  }
  return `${file}: the last turn ${recovered ? "recovered from an error" : "shows no failure"}`;
}

/**
 * `scan --kind records` (and `explain --kind records`): the profile's record readers over
 * whole session record files; returns the exit code.
 */
export function scanRecordFiles(
  sources: ReadonlyArray<{ label: string; text: string }>,
  registry: Registry,
  agent: string | undefined,
  json: boolean,
): number {
  if (agent === undefined) {
    throw new UsageError("scan: --kind records needs --agent NAME (whose record readers to use)");
  }
  const profile = requireProfile(registry, agent);
  const readers = profileReaders(registry.readers, profile);
  const classifier = profileClassifier(registry, profile);
  const now = Date.now();
  const scans = sources.map((s) => scanRecords(s.label, s.text, readers, classifier, now));
  if (json) {
    void stdoutSink.json(scans.map((s, i) => ({ file: sources[i].label, ...s })));
  } else {
    const lines = scans.flatMap((s, i) => [
      ...s.events.map((e) => formatEvent(e) + "\n"),
      formatLastTurn(sources[i].label, s) + "\n",
    ]);
    writeShown(lines.join(""));
    for (const d of new Set(scans.flatMap((s) => s.diagnostics))) warnLine(`turnguard: ${d}`);
  }
  return scans.some((s) => s.events.length > 0) ? 0 : 1;
}

/** One finding as a line of text. */
export function formatFinding(f: ScanFinding): string {
  const code = f.code !== null ? `, code ${f.code}` : "";
  return `${f.file}:${f.line}: ${f.anchor} [${f.category}${code}; ${f.retry.reason}] ${f.cause}`;
}

/**
 * Most bytes `scan` and `explain` read of one input (a file's first bytes, or stdin's): the
 * inputs are agent-written logs and records, which can be of any size or never end.
 */
export const MAX_INPUT_BYTES = 64 * 1024 * 1024;

/**
 * Reads one input through the bounded reader (lib/io/bounded_read.ts): a regular file,
 * not through a symbolic link, or stdin (`-`), at most MAX_INPUT_BYTES of it.
 */
export async function readSource(
  path: string,
  cwd: string,
  command = "scan",
): Promise<{ label: string; text: string }> {
  let read: { text: string; cut: boolean };
  const label = path === "-" ? "<stdin>" : path;
  if (path === "-") read = await readStdin(MAX_INPUT_BYTES);
  else {
    try {
      read = await readWholeFile(resolve(cwd, path), MAX_INPUT_BYTES);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const generic = code !== undefined && !["ELOOP", "EAGAIN", "EWOULDBLOCK"].includes(code);
      throw new UsageError(
        `${command}: cannot read ${path}${generic ? ` (${code})` : `: ${errorText(err)}`}`,
      );
    }
  }
  if (read.cut) {
    warnLine(`turnguard: ${command}: read only the first ${MAX_INPUT_BYTES} bytes of ${label}`);
  }
  return { label, text: read.text };
}

/** Runs `turnguard scan ARGS` and returns the exit code. */
export async function scanCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseOptions("scan", argv, SCAN_OPTIONS, true);
  if (positionals.length === 0) {
    throw new UsageError("scan: name at least one FILE, or - for stdin");
  }
  const kind = parseKind(values.kind);
  const cwd = process.cwd();
  const sources: { label: string; text: string }[] = [];
  for (const p of positionals) sources.push(await readSource(p, cwd));
  const registry = await loadRegistry({ configFlag: values.config, env: envRecord(), cwd });
  if (kind === "records") {
    return scanRecordFiles(sources, registry, values.agent, values.json === true);
  }
  const classifier = commandClassifier(registry, values.agent);
  const now = Date.now();
  const scans = sources.map((s) => scanText(s.label, s.text, classifier, kind, now));
  const findings = scans.flatMap((s) => s.findings);
  const diagnostics = [...new Set(scans.flatMap((s) => s.diagnostics))];
  if (values.json) {
    const causes = scans.flatMap((s, i) =>
      s.turnCause ? [{ file: sources[i].label, ...s.turnCause }] : []
    );
    void stdoutSink.json({ findings, causes, diagnostics });
  } else {
    const lines = findings.map((f) => formatFinding(f) + "\n");
    scans.forEach((s, i) => {
      if (s.turnCause) {
        lines.push(
          `${
            sources[i].label
          }: a turn would report line ${s.turnCause.line} (${s.turnCause.anchor})\n`,
        );
      }
    });
    writeShown(lines.join(""));
    for (const d of diagnostics) warnLine(`turnguard: ${d}`);
    if (findings.length === 0) warnLine("turnguard: scan: no anchor matched");
  }
  return findings.length > 0 ? 0 : 1;
}
