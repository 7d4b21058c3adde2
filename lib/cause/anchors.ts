/**
 * Anchors: declarative ones from anchors.toml compiled into plugin anchors, and the pure
 * matcher that finds a turn's terminal cause among its inputs.
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { CategorySchema } from "../core/outcome.ts";
import {
  type Anchor,
  type AnchorHit,
  AnchorHitSchema,
  type AnchorInput,
  defineAnchor,
  IdSchema,
  type LoadedAnchor,
} from "../plugin/api.ts";
import { capUtf8, dewrapGlog, oneLine } from "../text/text.ts";
import { callPlugin } from "../plugin/call.ts";
import type { Classifier } from "./classifier.ts";
import { inputText } from "./input_text.ts";
import { PLUGIN_CONTEXT } from "./text_class.ts";

export { inputText };

/** Longest cause kept, in bytes of UTF-8. */
export const MAX_CAUSE_BYTES = 500;

/** A declarative anchor as written in anchors.toml (`[[anchor]]`). */
export const DeclarativeAnchorSchema = once(() =>
  v.pipe(
    v.strictObject({
      id: IdSchema(),
      literal: v.optional(v.pipe(v.string(), v.minLength(1))),
      regex: v.optional(v.pipe(
        v.string(),
        v.minLength(1),
        v.check((s) => tryRegExp(s, "") !== null, "is not a valid regular expression"),
      )),
      ignore_case: v.optional(v.boolean(), false),
      priority: v.optional(v.number(), 0),
      category: v.optional(CategorySchema),
      code: v.optional(v.union([v.number(), v.string()])),
      dewrap: v.optional(v.picklist(["none", "glog"]), "none"),
      on: v.optional(
        v.pipe(
          v.array(v.picklist(["log", "error", "text"])),
          v.minLength(1, "name at least one of log, error, text"),
        ),
        ["log"],
      ),
      agents: v.optional(v.array(v.string())),
    }),
    v.check(
      (a) => (a.literal === undefined) !== (a.regex === undefined),
      "an anchor needs exactly one of `literal` or `regex`",
    ),
  )
);
/** A declarative anchor after validation, with defaults applied. */
export type DeclarativeAnchor = v.InferOutput<ReturnType<typeof DeclarativeAnchorSchema>>;

function tryRegExp(source: string, flags: string): RegExp | null {
  try {
    return new RegExp(source, flags);
  } catch {
    return null;
  }
}

/** Trims a raw cause to one readable line: de-wrapped if asked, capped at 500 bytes. */
export function tidyCause(raw: string, dewrap: "none" | "glog"): string {
  const line = oneLine(raw).trim();
  return capUtf8(dewrap === "glog" ? dewrapGlog(line) : line, MAX_CAUSE_BYTES);
}

/**
 * The most characters of one input a declarative regex runs on. A user's regex may
 * backtrack (`(?<cause>.*) failed$` is quadratic: about a minute on 256k spaces); on this
 * head it costs milliseconds whatever the agent printed. A cause is in a line's head.
 */
export const REGEX_HEAD_CHARS = 8 * 1024;

/** Compiles a declarative anchor into a plugin anchor (the same API user plugins use). */
export function compileAnchor(decl: DeclarativeAnchor, origin?: string): Anchor {
  const flags = decl.ignore_case ? "i" : "";
  const re = decl.regex !== undefined ? new RegExp(decl.regex, flags) : null;
  const literal = decl.literal !== undefined && decl.ignore_case
    ? decl.literal.toLowerCase()
    : decl.literal;
  return defineAnchor({
    id: decl.id,
    priority: decl.priority,
    agents: decl.agents,
    on: decl.on,
    origin,
    match(input) {
      const text = inputText(input);
      let raw: string | undefined;
      if (re) {
        const m = re.exec(
          text.length > REGEX_HEAD_CHARS ? text.slice(0, REGEX_HEAD_CHARS) : text,
        );
        if (!m) return null;
        raw = m.groups?.cause ?? text.slice(m.index);
      } else if (literal !== undefined) {
        const at = (decl.ignore_case ? text.toLowerCase() : text).indexOf(literal);
        if (at === -1) return null;
        raw = text.slice(at);
      }
      if (raw === undefined) return null;
      const cause = tidyCause(raw, decl.dewrap);
      if (cause.length === 0) return null;
      const hit: AnchorHit = { cause };
      if (decl.category) hit.category = decl.category;
      if (decl.code !== undefined) hit.code = decl.code;
      return hit;
    },
  });
}

/** One anchor's match in one input: which anchor, what it said, and which input. */
export interface Finding {
  anchor: LoadedAnchor;
  hit: AnchorHit;
  /** Index of the matching input in the list given to the matcher. */
  index: number;
}

/** The matcher's answer: the winning finding (if any) and what went wrong in plugins. */
export interface MatchResult {
  finding: Finding | null;
  diagnostics: string[];
}

/** Calls one anchor on one input; a throwing or malformed plugin becomes a diagnostic. */
export function tryMatch(
  anchor: LoadedAnchor,
  input: AnchorInput,
  diagnostics: string[],
): AnchorHit | null {
  const hit = callPlugin(
    { name: `anchor ${anchor.id}`, origin: anchor.origin, answer: "hit" },
    () => anchor.match(input, PLUGIN_CONTEXT),
    AnchorHitSchema(),
    diagnostics,
  );
  return hit && { ...hit, cause: capUtf8(hit.cause, MAX_CAUSE_BYTES) };
}

/**
 * Finds the terminal cause among `inputs` (oldest first) with the profile's classifier. The
 * highest-priority anchor that matches anywhere wins (most specific first); among its matches the last one wins, since
 * agents that retry log the same anchor again and again before they give up.
 */
export function findCause(
  classifier: Classifier,
  inputs: readonly AnchorInput[],
): MatchResult {
  const diagnostics: string[] = [];
  const candidates = classifier.candidates(inputs.map((i) => i.kind));
  for (const anchor of candidates) {
    for (let i = inputs.length - 1; i >= 0; i--) {
      if (!anchor.on.includes(inputs[i].kind)) continue;
      const hit = tryMatch(anchor, inputs[i], diagnostics);
      if (hit) return { finding: { anchor, hit, index: i }, diagnostics };
    }
  }
  return { finding: null, diagnostics };
}
