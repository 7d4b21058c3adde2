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
