/**
 * `turnguard explain [--agent NAME] [--config PATH] [--kind K] [--json] TEXT|- [TEXT...]`: for
 * each input, which anchors were tried in which order, what each said, and why the winner won;
 * and which signature of the provider vocabulary (vocabulary.toml) its words match.
 * Matching and classifying an input share one code plugin budget, as one turn does. Several
 * inputs are explained in turn by one process (`--json`: one document per line, in order).
 * Exit 0 when an anchor matched every input, 1 when one had none, 2 on a usage or config error.
 */
import { classify } from "../cause/classify.ts";
import { errorCause } from "../cause/error_cause.ts";
import { UsageError } from "../errors.ts";
import { explain, type Explanation } from "../cause/explain.ts";
import { inputText } from "../cause/anchors.ts";
import type { RetryHint } from "../core/outcome.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import { loadRegistry } from "../config/registry.ts";
import { envRecord, parseOptions } from "./args.ts";
import {
  commandClassifier,
  type InputKind,
  lineInput,
  parseKind,
  readSource,
  SCAN_OPTIONS,
  scanRecordFiles,
} from "./scan.ts";
import type { Classifier } from "../cause/classifier.ts";
import { evidenceOf, lookup, type Signature } from "../cause/vocabulary.ts";
import { stdoutSink, warnLine, writeShown } from "../io/output.ts";

/** The explanation as text, one line per anchor. */
export function formatExplanation(
  e: Explanation,
  classified: { category: string; retry: RetryHint; cause: string } | null,
): string {
  const out = [`input (${e.input.kind}): ${inputText(e.input)}`];
  const tried = e.trials.filter((t) => t.order !== null);
  out.push(`tried ${tried.length} anchor(s), highest priority first, then load order:`);
  for (const t of tried) {
    const what = t.result === "matched"
      ? `matched: ${t.hit!.cause}${t.hit!.category ? ` [${t.hit!.category}]` : ""}`
      : t.result === "failed"
      ? `failed: ${t.note}`
      : "no match";
    const origin = t.anchor.origin ? `  ${t.anchor.origin}` : "";
    out.push(`  ${t.order}. ${t.anchor.id}  priority ${t.anchor.priority}${origin}  ${what}`);
  }
  const skipped = e.trials.filter((t) => t.order === null);
  if (skipped.length > 0) {
    out.push(
      `not tried (they do not read ${e.input.kind} inputs): ${
        skipped.map((t) => t.anchor.id).join(", ")
      }`,
    );
  }
  out.push(`winner: ${e.winner ? e.winner.anchor.id : "none"} — ${e.why}`);
  if (e.winner && classified) {
    out.push(`cause: ${classified.cause}`);
    out.push(`category: ${classified.category}`);
    const r = classified.retry;
    const when = r.afterMs !== null ? ` (afterMs ${r.afterMs}, at ${r.at})` : "";
    out.push(`retry: ${r.reason}${when}`);
  }
  return out.join("\n") + "\n";
}

/**
 * What `explain` says of one input, in process: the matcher's story, and the category and
 * retry hint the input is classified with (an agent's error exactly as the proxy classifies
 * it). Matching and classifying share one plugin budget.
 */
export function explainInput(
  classifier: Classifier,
  text: string,
  kind: InputKind,
  now: number,
): {
  e: Explanation;
  diagnostics: string[];
  classified: { category: string; retry: RetryHint; cause: string } | null;
  vocabulary: Signature | null;
} {
  return withPluginBudget(() => {
    const input = lineInput(text, kind);
    const e = explain(classifier, input);
    const diagnostics = [...e.diagnostics];
    // An agent's error is classified exactly as the proxy classifies it.
    const classified = input.kind === "error"
      ? errorCause({ ...input.error }, classifier, now).cause
      : e.winner
      ? classify(e.winner.hit.cause, e.winner.hit, classifier, now, diagnostics)
      : null;
    return {
      e,
      diagnostics,
      vocabulary: lookup(evidenceOf(input)),
      classified: classified &&
        ("error" in classified
          ? {
            category: classified.error.category,
            retry: classified.retry,
            cause: classified.error.message,
          }
          : { ...classified, cause: e.winner?.hit.cause ?? "" }),
    };
  });
}

/**
 * The provider vocabulary's reading of the input, one line: which signature (vocabulary.toml)
 * its words, code or status match, and where that wording is documented.
 */
export function vocabularyLine(found: Signature | null): string {
  if (found === null) return "vocabulary: no signature matches\n";
  const { row, tier } = found;
  return `vocabulary: ${row.id} (${row.of}, by ${tier}) → ${row.category}  source: ${row.source}\n`;
}

/** Runs `turnguard explain ARGS` and returns the exit code. */
export async function explainCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseOptions("explain", argv, SCAN_OPTIONS, true);
  if (positionals.length === 0) {
    throw new UsageError("explain: give an input: the text itself, or - for stdin");
  }
  if (positionals.filter((p) => p === "-").length > 1) {
    throw new UsageError("explain: stdin (-) can be read once");
  }
  const kind = parseKind(values.kind);
  const raws: string[] = [];
  for (const p of positionals) {
    raws.push(p === "-" ? (await readSource("-", process.cwd(), "explain")).text : p);
  }
  const registry = await loadRegistry({
    configFlag: values.config,
    env: envRecord(),
    cwd: process.cwd(),
  });
  if (kind === "records") {
    return scanRecordFiles(
      raws.map((text, i) => ({ label: raws.length === 1 ? "<input>" : `<input ${i + 1}>`, text })),
      registry,
      values.agent,
      values.json === true,
    );
  }
  // One classifier for every input, as one proxy classifies every turn.
  const classifier = commandClassifier(registry, values.agent);
  let matched = 0;
  for (const [i, raw] of raws.entries()) {
    if (explainOne(classifier, raw.replace(/\r?\n$/, ""), kind, values.json === true, i > 0)) {
      matched++;
    }
  }
  return matched === raws.length ? 0 : 1;
}

/**
 * Prints what `explain` says of one input: one JSON document (one line), or the text
 * explanation (after a blank line when it is not the first). True when an anchor matched.
 */
function explainOne(
  classifier: Classifier,
  text: string,
  kind: InputKind,
  json: boolean,
  more: boolean,
): boolean {
  const { e, diagnostics, classified, vocabulary } = explainInput(
    classifier,
    text,
    kind,
    Date.now(),
  );
  if (json) {
    void stdoutSink.json({
      input: e.input,
      tried: e.trials.map((t) => ({
        order: t.order,
        anchor: t.anchor.id,
        priority: t.anchor.priority,
        origin: t.anchor.origin ?? null,
        result: t.result,
        hit: t.hit,
        note: t.note,
      })),
      winner: e.winner?.anchor.id ?? null,
      why: e.why,
      cause: e.winner ? classified?.cause ?? null : null,
      category: e.winner ? classified?.category ?? null : null,
      retry: e.winner ? classified?.retry ?? null : null,
      vocabulary: vocabulary && {
        id: vocabulary.row.id,
        of: vocabulary.row.of,
        tier: vocabulary.tier,
        category: vocabulary.row.category,
        source: vocabulary.row.source,
      },
      diagnostics,
    });
  } else {
    writeShown((more ? "\n" : "") + formatExplanation(e, classified) + vocabularyLine(vocabulary));
    for (const d of diagnostics) warnLine(`turnguard: ${d}`);
  }
  return e.winner !== null;
}
