/**
 * Small readers shared by the session record packs: fields of a parsed JSON record, read
 * without trusting its shape.
 */

/** The record as an object, or null. */
export function obj(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : null;
}

/** A string field, or null. */
export function str(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

/** The text of message content: a string, or the `text` of `{type:"text"}` blocks joined. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => {
    const block = obj(b);
    const textual = block?.type === "text" || (block !== null && block.type === undefined);
    return textual && typeof block?.text === "string" ? block.text : "";
  }).join("");
}

/** The first HTTP status an error sentence names (`API Error: 529 ...`), if any. */
export function statusIn(text: string): number | undefined {
  const m = text.match(/\b(?:API Error|status|HTTP)[: ]+([1-5]\d\d)\b/i);
  return m ? Number(m[1]) : undefined;
}
