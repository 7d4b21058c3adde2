/**
 * Terminal control characters in agent-controlled text, made visible: a reply or a cause
 * printed by `wait`, `log` or on stderr must not be able to move the cursor, retitle the
 * window or hide lines (ESC sequences, C1 controls, a lone carriage return).
 */

/**
 * C0 controls but tab and newline, a carriage return not ending a line, DEL, and C1
 * controls. One character class and a one-character lookahead: linear on any input.
 */
// deno-lint-ignore no-control-regex -- finding control characters is the point
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)/g;

/** `text` with each control character written as `\xHH` (tab, newline and CRLF kept). */
export function escapeControls(text: string): string {
  return text.replace(
    CONTROL,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}
