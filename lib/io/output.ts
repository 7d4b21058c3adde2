/**
 * turnguard's own lines about agent-controlled text, made safe to store and show: redacted
 * (lib/text/redact.ts: agents print keys and tokens) and with terminal control characters made
 * visible (lib/text/control_chars.ts). Written through lib/io/stdio.ts, which delivers every byte
 * before turnguard exits.
 */
import { escapeControls } from "../text/control_chars.ts";
import { redact } from "../text/redact.ts";
import { stderr, stdout } from "./stdio.ts";

/** Text as turnguard shows it: secrets redacted, control characters escaped. */
export function shown(text: string): string {
  return escapeControls(redact(text));
}

/** One of turnguard's own lines on stderr (the newline is added). */
export function warnLine(line: string): void {
  void stderr.write(shown(line) + "\n");
}

/** Human-readable output built from agent-controlled data (`wait`, `log`) on stdout. */
export function writeShown(text: string): void {
  void stdout.write(shown(text));
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
