/**
 * Terminal control characters in agent-controlled text, made visible: a reply or a cause
 * printed by `wait`, `log` or on stderr must not be able to move the cursor, retitle the
 * window or hide lines (ESC sequences, C1 controls, a lone carriage return), nor reorder
 * what is shown (Unicode bidirectional overrides and isolates, "Trojan Source").
 */

/**
 * C0 controls but tab and newline, a carriage return not ending a line, DEL, C1 controls,
 * and the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069).
 * One character class and a one-character lookahead: linear on any input.
 */
// deno-lint-ignore no-control-regex -- finding control characters is the point
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)/g;

/**
 * `text` with each control character written as `\xHH` (a bidirectional control as
 * `\uHHHH`); tab, newline and CRLF kept.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code > 0xff
      ? `\\u${code.toString(16).padStart(4, "0")}`
      : `\\x${code.toString(16).padStart(2, "0")}`;
  });
}
