/**
 * The provider vocabulary: error signatures of model providers, gateways and HTTP runtimes
 * (vocabulary.toml, each row citing its primary source), and the one lookup that gives a
 * cause its category when no more specific anchor of a pack did. It classifies causes; it
 * never decides that a text is a failure (no anchor of it reads a turn's streamed text).
 *
 * Evidence is read in tiers, most specific first: a provider's own code or type, then its
 * words, then an HTTP status, then a wrapper's words (an SDK's or gateway's exception class,
 * a catch-all reason phrase). Within a tier, the category rank (quota first) decides.
 *
 * Words are compared normalized, on both sides, once: CamelCase split, lower case, every
 * run of other characters (spaces, `_`, `-`, `.`, punctuation) one space, so that
 * `ConnectionRefused`, `connection_refused` and `Connection refused.` read alike, and a
 * literal matches whole words only (`terminated` is not in `unterminated`).
 *
 * The rows are validated at build time (lib/config/vocabulary_file.ts, file/line/key errors)
 * and stored in lib/cause/vocabulary.json, read here.
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { type Category, CategorySchema } from "../core/outcome.ts";
import { IdSchema } from "../plugin/api.ts";
import type { AnchorInput } from "../plugin/api.ts";
import { classifiedHead } from "../text/text.ts";
import {
  errorWords,
  NO_QUOTA,
  parseProviderError,
  type ProviderError,
  rpcProviderError,
} from "./provider_error.ts";
import { inputText } from "./input_text.ts";
import compiled from "./vocabulary.json" with { type: "json" };

/** Who words a signature: a model provider, a gateway in front of one, or an HTTP runtime. */
export const SPEAKERS = ["provider", "gateway", "runtime"] as const;

/** One row of vocabulary.toml (`[[signature]]`). */
export const SignatureRowSchema = once(() =>
  v.pipe(
    v.strictObject({
      id: IdSchema(),
      /** The provider, gateway or runtime whose wording it is (`OpenAI`, `LiteLLM`, `Bun`). */
      of: v.pipe(v.string(), v.minLength(1)),
      /** What `of` is. */
      speaker: v.picklist(SPEAKERS),
      /** A literal, compared as normalized words. */
      text: v.optional(v.pipe(v.string(), v.minLength(1))),
      /** A regex over the normalized words (lower case, single spaces, a space at each end). */
      regex: v.optional(v.pipe(
        v.string(),
        v.minLength(1),
        v.check((s) => tryRegExp(s) !== null, "is not a valid regular expression"),
      )),
      /** The HTTP status the source documents for it. */
      status: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(599))),
      /** The provider's error code or type (`insufficient_quota`, `RESOURCE_EXHAUSTED`). */
      code: v.optional(v.pipe(v.string(), v.minLength(1))),
      category: CategorySchema,
      /** Whether the source says a later attempt can succeed (checked against the category). */
      retryable: v.boolean(),
      /** Words of a wrapper (an SDK's or gateway's class, a catch-all phrase): ranked last. */
      wrapper: v.optional(v.boolean(), false),
      /** Where the wording comes from: a documentation URL, or `owner/repo path:line`. */
      source: v.pipe(v.string(), v.minLength(8)),
      /** The documented text the row's test reads, where `text` alone is not it. */
      sample: v.optional(v.pipe(v.string(), v.minLength(1))),
    }),
    v.check(
      (r) => r.text === undefined || r.regex === undefined,
      "a signature has `text` or `regex`, not both",
    ),
    v.check(
      (r) =>
        r.text !== undefined || r.regex !== undefined || r.code !== undefined ||
        r.status !== undefined,
      "a signature needs at least one of `text`, `regex`, `code`, `status`",
    ),
    v.check(
      (r) => r.text === undefined || normalizeWords(r.text).trim() !== "",
      "`text` has no letters or digits",
    ),
    v.check(
      (r) => r.text !== undefined || r.sample !== undefined,
      "a signature without `text` needs a `sample`: the documented text its test reads",
    ),
  )
);
/** A validated row. */
export type SignatureRow = v.InferOutput<ReturnType<typeof SignatureRowSchema>>;

/** vocabulary.toml as a whole. */
export const VocabularyFileSchema = once(() =>
  v.strictObject({ signature: v.array(SignatureRowSchema()) })
);

/** A row as stored in lib/cause/vocabulary.json: the validated row and its line in the file. */
export type StoredSignature = SignatureRow & { line: number | null };

/** How specific a piece of evidence is, most specific first. */
export type Tier = "code" | "words" | "status" | "wrapper";
/** All tiers, in precedence order. */
export const TIERS: readonly Tier[] = ["code", "words", "status", "wrapper"];

/**
 * Where the vocabulary ranks among anchors (priority): its words above the generic pack's
 * word rules (lib/cause/word_rules.ts, the generic pack's anchors at 15 to 90) and below every agent pack and every declarative
 * anchor of anchors.toml (100 and up); its statuses and wrappers' words below every word
 * rule, above the bare status fallback (10).
 */
export const VOCABULARY_PRIORITY = { words: 95, status: 12 } as const;

/** The tier a row is read in. */
export function tierOf(row: SignatureRow): Tier {
  if (row.text !== undefined || row.regex !== undefined) return row.wrapper ? "wrapper" : "words";
  if (row.code !== undefined) return "code";
  return "status";
}

/**
 * Among signatures of one tier that match, the category that wins: a quota outranks the
 * rate limit that carries it, an auth failure or a context overflow outranks a passing
 * limit, a capacity failure outranks the timeout or dropped connection it causes.
 */
export const CATEGORY_RANK: readonly Category[] = [
  "quota",
  "auth",
  "context",
  "model",
  "rate_limit",
  "capacity",
  "timeout",
  "network",
  "crash",
  "unknown",
];

function tryRegExp(source: string): RegExp | null {
  try {
    return new RegExp(source);
  } catch {
    return null;
  }
}

/**
 * Text as the vocabulary compares it: CamelCase split into words, lower case, every run of
 * anything but ASCII letters and digits one space, and one space at each end (so a literal
 * ` b c ` is found only as whole words).
 */
export function normalizeWords(text: string): string {
  const words = text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z])(?=[A-Z][a-z])/g, "$1 ")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim();
  return ` ${words} `;
}

/** What one cause offers the vocabulary. */
export interface Evidence {
  /** Structured codes and types the provider gave (any spelling). */
  codes?: readonly string[];
  /** Every word of the cause. */
  text?: string;
  /** Its HTTP status. */
  status?: number;
}

/** A row that matched, and in which tier. */
export interface Signature {
  row: StoredSignature;
  tier: Tier;
}

interface Compiled {
  row: StoredSignature;
  tier: Tier;
  rank: number;
  literal: string | null;
  regex: RegExp | null;
  code: string | null;
}

/** The rows, compiled once and ordered by tier, then category rank, then file order. */
const ROWS = once((): readonly Compiled[] =>
  (compiled.signature as StoredSignature[])
    .map((row, order) => ({
      row,
      order,
      tier: tierOf(row),
      rank: CATEGORY_RANK.indexOf(row.category),
      literal: row.text !== undefined ? normalizeWords(row.text) : null,
      regex: row.regex !== undefined ? new RegExp(row.regex) : null,
      code: row.code !== undefined ? normalizeWords(row.code) : null,
    }))
    .sort((a, b) =>
      TIERS.indexOf(a.tier) - TIERS.indexOf(b.tier) || a.rank - b.rank || a.order - b.order
    )
);

/** Every stored row, in file order (for tests and the coverage table). */
export function vocabularyRows(): readonly StoredSignature[] {
  return compiled.signature as StoredSignature[];
}

/**
 * The signature the evidence matches in the first of `tiers` (precedence order) where one
 * does: a code row by one of the codes, a text or regex row by the words, a status-only row
 * by the status. Null when none matches.
 */
export function lookup(evidence: Evidence, tiers: readonly Tier[] = TIERS): Signature | null {
  const codes = new Set((evidence.codes ?? []).map(normalizeWords));
  const words = evidence.text !== undefined ? normalizeWords(classifiedHead(evidence.text)) : "";
  for (const c of ROWS()) {
    if (!tiers.includes(c.tier)) continue;
    let hit = false;
    if (c.tier === "code") hit = c.code !== null && codes.has(c.code);
    else if (c.tier === "status") hit = evidence.status === c.row.status;
    else if (c.literal !== null) hit = words.includes(c.literal);
    else if (c.regex !== null) hit = c.regex.test(words);
    if (hit) return { row: c.row, tier: c.tier };
  }
  return null;
}

/**
 * An HTTP status written in words (`Error code: 429`, `status code 503`, `HTTP 502`,
 * `API Error: 529`, or a text that starts with one): the status a wrapper reports when it
 * passes no JSON on. Every repetition is bounded: linear on any text.
 */
const STATUS_WORDS =
  /(?:\b(?:status(?: code)?|error(?: code)?|http(?:\/\d(?:\.\d)?)?)[\s:=]{0,4}|^\s{0,8})([1-5]\d\d)\b/i;

/** The status a text states in words, if any. */
export function statusInWords(text: string): number | undefined {
  const m = classifiedHead(text).match(STATUS_WORDS);
  return m ? Number(m[1]) : undefined;
}

/** The structured codes a provider error carries. */
function providerCodes(p: ProviderError | null): string[] {
  if (p === null) return [];
  return [...p.codes ?? [], p.type, p.grpc, p.reason].filter((c): c is string =>
    typeof c === "string"
  );
}

/**
 * The evidence in one anchor input: the provider error inside it (codes, status), every
 * word of it (a JSON-RPC error's message and data, whatever the data's shape), and for an
 * error the JSON-RPC code when it is an HTTP status.
 */
export function evidenceOf(input: AnchorInput): Evidence & { provider: ProviderError | null } {
  if (input.kind === "error") {
    const provider = rpcProviderError(input.error);
    const words = errorWords(input.error);
    const code = input.error.code;
    const rpcStatus = typeof code === "number" && code >= 400 && code <= 599 ? code : undefined;
    return {
      provider,
      codes: providerCodes(provider),
      text: words,
      status: provider?.status ?? rpcStatus ?? statusInWords(words),
    };
  }
  const text = inputText(input);
  const provider = parseProviderError(text);
  return {
    provider,
    codes: providerCodes(provider),
    text,
    status: provider?.status ?? statusInWords(text),
  };
}

/** A QuotaFailure id's window: a day or longer is a quota, a minute or an hour a rate limit. */
function quotaIdCategory(ids: readonly string[] | undefined): Category | undefined {
  if (!ids?.length) return undefined;
  if (ids.some((id) => /Per(?:Day|Month|Week)/.test(id))) return "quota";
  if (ids.some((id) => /Per(?:Minute|Second|Hour)/.test(id))) return "rate_limit";
  return undefined;
}

/**
 * The category a provider error's structured fields give, before any word: "Quota exceeded
 * for metric: ..., limit: 0" (no quota at all for this model), QuotaFailure ids, then the
 * status 402 (Google's RESOURCE_EXHAUSTED when prepaid credits are depleted, and every
 * provider's payment required), then the vocabulary's code rows (a quota code outranks the
 * rate-limit type that carries it). Undefined when the structure says nothing a user can act on
 * (`invalid_request_error`, `INVALID_ARGUMENT`: the words decide).
 */
export function providerCategory(p: ProviderError | null): Category | undefined {
  if (p === null) return undefined;
  if (p.codes?.includes("RESOURCE_EXHAUSTED") && NO_QUOTA.test(p.message)) return "quota";
  const byQuota = quotaIdCategory(p.quotaIds);
  if (byQuota !== undefined) return byQuota;
  if (p.status === 402) return "quota";
  // A type, code or ErrorInfo reason is more specific than the status word that carries it
  // (MODEL_CAPACITY_EXHAUSTED under RESOURCE_EXHAUSTED is capacity, not a rate limit).
  const codes = providerCodes(p);
  const specific = codes.filter((c) => c !== p.grpc);
  return (lookup({ codes: specific }, ["code"]) ?? lookup({ codes }, ["code"]))?.row.category;
}
