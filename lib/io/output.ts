/**
 * The sinks of turnguard's own standard output and standard error: every byte turnguard
 * writes there goes through this module, made safe where it is written — secrets redacted
 * (lib/text/redact.ts: agents print keys and tokens) and terminal control characters made
 * visible (lib/text/control_chars.ts) — so no call site can forget. The only bytes that pass
 * unchanged are the ones that are not turnguard's own: the agent's output copied through
 * (`passThrough`: `run`'s copy of the agent's stdout and stderr, the proxy's wire to the
 * client and the agent's stderr, a replayed agent's lines). Writes go through
 * lib/io/stdio.ts, which delivers every byte before turnguard exits; no other module
 * imports its streams, and nothing in lib/ writes to `process.stdout`/`process.stderr` or
 * `console` (tests/unit/io/sinks.test.ts checks both). The other outputs have their own one
 * sink: the journal (lib/journal/records.ts, `encodeRecord`), the outcome file
 * (lib/cli/outcome_file.ts), telemetry (lib/telemetry/sink.ts).
 */
import { escapeControls } from "../text/control_chars.ts";
import { redact, redactedJson } from "../text/redact.ts";
import { stderr, stdout, type StdStream } from "./stdio.ts";

/** Text as turnguard shows it: secrets redacted, control characters escaped. */
export function shown(text: string): string {
  return escapeControls(redact(text));
}

/** One of turnguard's two standard streams, as turnguard's own output reaches it. */
export class OwnSink {
  constructor(readonly stream: StdStream) {}

  /** Text (a report, a help page): redacted and escaped. */
  text(text: string): Promise<void> {
    return this.stream.write(shown(text));
  }

  /** One line of turnguard's own (the newline is added): redacted and escaped. */
  line(text: string): Promise<void> {
    return this.stream.write(shown(text) + "\n");
  }

  /**
   * A JSON value and a newline: every string in it redacted, raw control characters escaped
   * (one line unless `space` indents it).
   */
  json(value: unknown, space?: number): Promise<void> {
    return this.stream.write(redactedJson(value, space) + "\n");
  }

  /**
   * The stream for bytes that are not turnguard's own and pass unchanged: the agent's
   * output copied through, the proxy's wire. Never for text turnguard composes.
   */
  get passThrough(): StdStream {
    return this.stream;
  }
}

/** turnguard's standard output. */
export const stdoutSink: OwnSink = new OwnSink(stdout);
/** turnguard's standard error. */
export const stderrSink: OwnSink = new OwnSink(stderr);

/** One of turnguard's own lines on stderr (the newline is added). */
export function warnLine(line: string): void {
  void stderrSink.line(line);
}

/** Human-readable output built from agent-controlled data (`wait`, `log`) on stdout. */
export function writeShown(text: string): void {
  void stdoutSink.text(text);
}

/**
 * A stream turnguard was handed for its stderr (the proxy's `stderr`: a Writable, or a
 * test's collector) as a sink: its own lines through `line` (redacted, escaped), the agent's
 * stderr bytes through `passThrough` (unchanged).
 */
export interface LineSink {
  line(text: string): void;
  passThrough(bytes: Uint8Array): void;
}

/** `writer` as a LineSink. */
export function lineSink(writer: { write(chunk: string | Uint8Array): unknown }): LineSink {
  return {
    line: (text) => void writer.write(shown(text) + "\n"),
    passThrough: (bytes) => void writer.write(bytes),
  };
}

/** Most bytes of stray output (see captureStrayOutput) shown per process. */
export const STRAY_OUTPUT_BYTES = 64 * 1024;

/**
 * Routes what turnguard itself never writes on purpose — `console.*` of any code in the
 * main thread, the runtime's `process.emitWarning` — to stderr through this sink
 * (redacted, escaped, at most STRAY_OUTPUT_BYTES per process), never to stdout: in proxy
 * mode stdout is the client's ACP wire, in run mode the agent's own output. Code plugins
 * run in workers, whose output lib/plugin/worker.js takes the same way.
 */
export function captureStrayOutput(): void {
  let left = STRAY_OUTPUT_BYTES;
  const sink = (text: string) => {
    if (left <= 0) return;
    const line = text.length > left
      ? text.slice(0, left) + " [further stray output dropped]"
      : text;
    left -= text.length;
    warnLine(`turnguard: ${line.replace(/\n$/, "")}`);
  };
  const format = (args: unknown[]) =>
    args.map((a) => {
      if (typeof a === "string") return a;
      try {
        return JSON.stringify(a) ?? String(a);
      } catch {
        return String(a);
      }
    }).join(" ");
  const methods = ["log", "info", "debug", "warn", "error", "trace", "dir", "table"] as const;
  for (const name of methods) console[name] = (...args: unknown[]) => sink(format(args));
  process.emitWarning = ((warning: string | Error) =>
    sink(
      `runtime warning: ${warning instanceof Error ? warning.message : String(warning)}`,
    )) as typeof process.emitWarning;
}
