/** Reading parsed JSON: the one test for a plain object, shared by every reader of JSON. */

/** True for a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
