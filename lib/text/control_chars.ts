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

/**
 * What `JSON.stringify` leaves raw that a terminal may act on: DEL, C1 controls, the
 * bidirectional controls, and the line and paragraph separators.
 */
const RAW_IN_JSON = /[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON text with those characters written as `\uHHHH` escapes: the same JSON value, safe
 * to show (`--json` output read on a terminal, `cat` of the journal).
 */
export function escapeJsonControls(json: string): string {
  return json.replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
