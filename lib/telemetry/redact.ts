/**
 * Secret redaction for exported text. A minimal stand-in: the journal's redaction module
 * replaces it once it exists (its one call site is `redactText` in lib/telemetry/record.ts).
 * It masks the shapes credentials usually have in agent output and error messages.
 */

/** What a masked secret is replaced with. */
export const REDACTED = "[REDACTED]";

/** Secret shapes and what each becomes (`$1`, `$2`: the parts kept). */
const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  // `Authorization: Bearer …`, `Basic …`
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // key=value / "key": "value" with a secret-sounding key
  [
    /\b([A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|password|passwd|credential)s?)(["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}/gi,
    `$1$2${REDACTED}`,
  ],
  // credentials in URLs: scheme://user:password@host
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:)[^\s/@]+@/gi, `$1${REDACTED}@`],
  // Vendor key shapes: OpenAI/Anthropic (sk-…), GitHub, Google, AWS, Slack
  [/\bsk-[A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  [/\bAKIA[0-9A-Z]{16}\b/g, REDACTED],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/g, REDACTED],
];

/** The text with every secret-looking part replaced by REDACTED. */
export function redact(text: string): string {
  let out = text;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  return out;
}
