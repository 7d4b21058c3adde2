/**
 * Reading parsed JSON: the one test for a plain object, and the one bound on nesting that
 * every reader of agent-controlled JSON applies before it walks a value.
 */

/** True for a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The deepest nesting of arrays and objects turnguard reads. Deeper JSON (tens of thousands
 * of levels overflow the stack of `JSON.stringify` and of every recursive walk) is opaque:
 * its bytes pass, nothing reads inside it. Real ACP messages nest a few dozen levels.
 */
export const MAX_JSON_DEPTH = 512;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether JSON text (bytes or a string of it) nests arrays and objects deeper than
 * `max`. One pass, no allocation; brackets inside strings do not count. Text shorter than
 * twice the bound cannot be that deep and is not scanned.
 */
export function nestsDeeper(text: Uint8Array | string, max = MAX_JSON_DEPTH): boolean {
  const n = text.length;
  if (n <= 2 * max) return false;
  const at = typeof text === "string" ? (i: number) => text.charCodeAt(i) : (i: number) => text[i];
  let depth = 0;
  let inString = false;
  for (let i = 0; i < n; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Whether a parsed value nests arrays and objects deeper than `max`. Iterative (no stack
 * to overflow), stops at the first path too deep.
 */
export function valueNestsDeeper(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * `JSON.stringify` for agent-controlled values: "" when a value cannot be written (nested
 * too deeply for the stack, a cycle, a BigInt). Never throws.
 */
export function jsonText(value: unknown): string {
  // Overflowing the stack is slow (seconds at 50,000 levels): the depth is looked at first.
  if (valueNestsDeeper(value)) return "";
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}

/**
 * `JSON.parse` for agent-controlled text: undefined when the text is not JSON, or nests
 * deeper than MAX_JSON_DEPTH (then nothing may walk it). Never throws.
 */
export function parseBoundedJson(text: string): unknown {
  if (nestsDeeper(text)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
