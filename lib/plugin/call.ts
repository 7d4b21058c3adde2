/**
 * Calling into a plugin: one anchor's `match` or one detector's `detect`, with its answer
 * validated. A plugin that throws or answers in the wrong shape becomes a diagnostic that
 * names it (and where it came from), never a crash.
 */
import * as v from "valibot";
import { errorText } from "../errors.ts";

/** Who is being called, for diagnostics: `anchor agy.executor (/path/plugin.ts)`. */
export interface PluginLabel {
  /** `anchor ID` or `publish: detector ID`. */
  name: string;
  origin?: string;
  /** What a valid answer is called: `hit`, `detection`. */
  answer: string;
}

/** Calls `call`; returns its validated answer, or null for no answer or a bad one. */
export function callPlugin<S extends v.GenericSchema>(
  label: PluginLabel,
  call: () => unknown,
  schema: S,
  diagnostics: string[],
): v.InferOutput<S> | null {
  const who = `${label.name}${label.origin ? ` (${label.origin})` : ""}`;
  let result: unknown;
  try {
    result = call();
  } catch (err) {
    diagnostics.push(`${who} threw: ${errorText(err)}`);
    return null;
  }
  if (result === null || result === undefined) return null;
  const parsed = v.safeParse(schema, result);
  if (!parsed.success) {
    diagnostics.push(`${who} returned an invalid ${label.answer}: ${parsed.issues[0].message}`);
    return null;
  }
  return parsed.output;
}
