/**
 * Redaction: well-known secret shapes (provider API keys, bearer tokens, `Authorization:`
 * headers, `key=`/`token=` parameters, `"password": "…"` assignments, passwords in URLs)
 * replaced by a marker in everything turnguard stores, prints or exports — journal, outcome
 * file and JSON, stderr lines, `wait`/`log` output, telemetry. Agents print their keys in
 * error messages and debug logs; turnguard must not keep them.
 *
 * A value already replaced (it starts with `[`) is not replaced again.
 *
 * Pure, and linear-time on any input: every pattern starts with a literal (or a one-char
 * lookbehind and a literal), has no nested quantifier, and every quantifier that can give
 * back characters is bounded, so a failed attempt costs a constant or the length of one run
 * of token characters that a successful match then consumes.
 */

import { escapeJsonControls } from "./control_chars.ts";

/** One secret shape: what it is, and the pattern that finds it. */
export interface SecretRule {
  kind: string;
  pattern: RegExp;
  /** The replacement; `$1` keeps a header or parameter name. */
  replace: string;
}

/** The marker a redacted secret becomes. */
export function redactedMarker(kind: string): string {
  return `[REDACTED:${kind}]`;
}

/** Not inside a longer word: the character before is no letter or digit. */
const START = "(?<![A-Za-z0-9])";

/**
 * An optional quote around a name or value — also JSON-escaped (`\\"`), as in an error body
 * quoted inside a log line. At most two characters: no backtracking to speak of.
 */
const QUOTE = `\\\\?["']?`;

function rule(kind: string, source: string, flags = "g"): SecretRule {
  return { kind, pattern: new RegExp(source, flags), replace: redactedMarker(kind) };
}

/** The secret shapes, most specific first (an Anthropic key is also an `sk-` key). */
export const SECRET_RULES: readonly SecretRule[] = [
  rule("anthropic", `${START}sk-ant-[A-Za-z0-9_-]{16,}`),
  rule("openai", `${START}sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`),
  rule("google", `${START}AIza[A-Za-z0-9_-]{30,}`),
  rule("github", `${START}gh[pousr]_[A-Za-z0-9]{30,}`),
  rule("github", `${START}github_pat_[A-Za-z0-9_]{22,}`),
  rule("aws", `${START}(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])`),
  rule("slack", `${START}xox[abposr]-[A-Za-z0-9-]{10,}`),
  {
    kind: "header",
    pattern: new RegExp(
      `${START}((?:proxy-)?authorization|x-api-key|x-goog-api-key|api-key)(${QUOTE}[ \\t]{0,8}[:=][ \\t]{0,8}${QUOTE})(?:(?:bearer|basic|token)[ \\t]{1,8})?[^\\s"'\\\\,;]{4,}`,
      "gi",
    ),
    replace: `$1$2${redactedMarker("header")}`,
  },
  {
    kind: "bearer",
    pattern: new RegExp(`${START}(bearer[ \\t]{1,8})[A-Za-z0-9._~+/=-]{8,}`, "gi"),
    replace: `$1${redactedMarker("bearer")}`,
  },
  {
    kind: "param",
    pattern: new RegExp(
      `(?<![A-Za-z0-9_-])((?:api[_-]?key|key|access[_-]?token|auth[_-]?token|refresh[_-]?token|id[_-]?token|token|secret|client[_-]?secret|password|passwd)=)[^\\s&"'<>#;,\\[][^\\s&"'<>#;,]*`,
      "gi",
    ),
    replace: `$1${redactedMarker("param")}`,
  },
  {
    kind: "secret",
    pattern: new RegExp(
      `(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{0,40}?(?:api[_-]?key|apikey|secret|token|password|passwd|credentials?))(${QUOTE}[ \\t]{0,4}[:=][ \\t]{0,4}${QUOTE})[^\\s"',;&<>\\[\\\\][^\\s"',;&<>\\\\]{3,}`,
      "gi",
    ),
    replace: `$1$2${redactedMarker("secret")}`,
  },
  /*
   * A key cut short by a length cap (500 bytes of a cause, a reply's 64 KiB) is too short
   * for the rules above, yet its first characters are still secret: a key prefix at the very
   * end of the text, with the ellipsis a cap may add, goes as a whole.
   */
  rule(
    "cut",
    `${START}(?:sk-|AIza|gh[pousr]_|github_pat_|xox[abposr]-|AKIA|ASIA)[A-Za-z0-9_-]{0,40}(?=(?:…|\\.\\.\\.)?$)`,
  ),
  {
    kind: "url",
    pattern: new RegExp(
      `(?<![A-Za-z0-9+.-])([a-z][a-z0-9+.-]{0,31}://[^\\s/:@]{1,256}:)[^\\s/@]{1,256}@`,
      "gi",
    ),
    replace: `$1${redactedMarker("url")}@`,
  },
];

/**
 * A literal that every rule above needs somewhere in its match (case-insensitive: a superset
 * of the case-sensitive ones). Most strings turnguard stores hold none of them, and one test
 * of this pattern spares them the rules. A new rule must add its literal here
 * (tests/unit/text/redact.test.ts compares `redact` with the rules applied one by one).
 */
const ANY_RULE_LITERAL =
  /sk-|aiza|gh[pousr]_|github_pat_|akia|asia|xox|authorization|key|bearer|token|secret|passw|credential|:\/\//i;

/** `text` with every secret shape replaced by its marker. */
export function redact(text: string): string {
  if (!ANY_RULE_LITERAL.test(text)) return text;
  let out = text;
  for (const r of SECRET_RULES) {
    r.pattern.lastIndex = 0;
    out = out.replace(r.pattern, r.replace);
  }
  return out;
}

/**
 * `JSON.stringify` with every string value redacted (keys and structure are kept), and
 * the control characters it leaves raw escaped (lib/text/control_chars.ts).
 */
export function redactedJson(value: unknown, space?: number): string {
  return escapeJsonControls(JSON.stringify(
    value,
    (_key, v) => typeof v === "string" ? redact(v) : v,
    space,
  ));
}
