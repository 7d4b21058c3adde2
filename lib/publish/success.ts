/**
 * Did a tool call succeed? A publish counts only when its call completed without a failure
 * signal — not merely when it ran. Agents report failure in many shapes: `status`,
 * `isError`, exit codes in `rawOutput` or `_meta` under several names, or an
 * `Exit code: 1` line in the call's text output. Pure.
 */
import type { ToolCallState } from "../plugin/api.ts";
import { isObject } from "../acp/jsonrpc.ts";

/** The verdict on one call, with the signal that decided it (for diagnostics). */
export type CallVerdict = { succeeded: true } | { succeeded: false; reason: string };

/** Keys that hold a process exit code, at any depth (up to MAX_DEPTH). */
const EXIT_KEYS = new Set([
  "exit_code",
  "exitCode",
  "exit_status",
  "exitStatus",
  "returncode",
  "returnCode",
  "return_code",
  "exit",
]);

/** Keys that flag an error result, at any depth (up to MAX_DEPTH). */
const ERROR_FLAGS = new Set(["isError", "is_error"]);

/** Keys of rawOutput whose string value is the command's printed output. */
const TEXT_KEYS = ["output", "formatted_output", "aggregated_output", "stdout", "stderr", "result"];

/** How deep failure signals are looked for inside rawOutput and _meta. */
const MAX_DEPTH = 3;

/** An `Exit code: 1` / `exit status 1` / `exited with code 1` line in text output. */
const EXIT_LINE =
  /^[ \t>*]*(?:process )?(?:exit(?:ed)?(?: with)?[ _]?(?:code|status))[ \t]*[:=]?[ \t]*\(?(-?\d+)\)?/gim;

/** A number-like exit code (`1`, `"1"`), or null. */
function asCode(value: unknown): number | null {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string" && /^-?\d+$/.test(value.trim())) return Number(value.trim());
  return null;
}

interface Signals {
  isError: string | null;
  exitCodes: Array<{ code: number; at: string }>;
}

/** Collects error flags and exit codes in a structured value. */
function collect(value: unknown, at: string, depth: number, out: Signals): void {
  if (depth > MAX_DEPTH) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => collect(item, `${at}[${i}]`, depth + 1, out));
    return;
  }
  if (!isObject(value)) return;
  for (const [key, inner] of Object.entries(value)) {
    const path = `${at}.${key}`;
    if (ERROR_FLAGS.has(key) && inner === true) out.isError ??= path;
    const code = asCode(inner);
    const plainCode = key === "code" && (depth === 0 || at.endsWith(".exit"));
    if (code !== null && (EXIT_KEYS.has(key) || plainCode)) {
      out.exitCodes.push({ code, at: path });
    }
    if (typeof inner === "object") collect(inner, path, depth + 1, out);
  }
}

/** The texts a call printed: string rawOutput, its output fields, and text content blocks. */
function outputTexts(call: ToolCallState): Array<{ text: string; at: string }> {
  const texts: Array<{ text: string; at: string }> = [];
  const raw = call.rawOutput;
  if (typeof raw === "string") texts.push({ text: raw, at: "rawOutput" });
  if (isObject(raw)) {
    for (const key of TEXT_KEYS) {
      const value = raw[key];
      if (typeof value === "string") texts.push({ text: value, at: `rawOutput.${key}` });
    }
  }
  const blocks = [
    ...(Array.isArray(call.content) ? call.content : []),
    ...(isObject(raw) && Array.isArray(raw.content) ? raw.content : []),
  ];
  for (const block of blocks) {
    if (!isObject(block)) continue;
    const inner = isObject(block.content) ? block.content : block;
    if (typeof inner.text === "string") texts.push({ text: inner.text, at: "content" });
  }
  return texts;
}

/**
 * Whether a merged tool call succeeded: status `completed` and no failure signal —
 * `isError: true`, a non-zero exit code in rawOutput or _meta (structured codes decide
 * over text), or an `Exit code: N` line with N ≠ 0 in the call's text output.
 */
export function callVerdict(call: ToolCallState): CallVerdict {
  const status = call.status ?? null;
  if (status !== "completed") {
    return { succeeded: false, reason: status === null ? "never reported a status" : status };
  }
  const signals: Signals = { isError: null, exitCodes: [] };
  collect(call.rawOutput, "rawOutput", 0, signals);
  collect(call._meta, "_meta", 0, signals);
  if (signals.isError) return { succeeded: false, reason: `${signals.isError} is true` };
  const nonZero = signals.exitCodes.find((e) => e.code !== 0);
  if (nonZero) return { succeeded: false, reason: `exit code ${nonZero.code} (${nonZero.at})` };
  if (signals.exitCodes.length > 0) return { succeeded: true };
  if (isObject(call.rawOutput) && call.rawOutput.success === false) {
    return { succeeded: false, reason: "rawOutput.success is false" };
  }
  for (const { text, at } of outputTexts(call)) {
    for (const m of text.matchAll(EXIT_LINE)) {
      const code = Number(m[1]);
      if (code !== 0) return { succeeded: false, reason: `exit code ${code} (${at})` };
    }
  }
  return { succeeded: true };
}
