/**
 * The embedded defaults compiled ahead of time: anchors.toml parsed and validated, and the
 * line of every anchor and detector, written to lib/config/embedded_config.json; and the
 * provider vocabulary (vocabulary.toml) validated into lib/cause/vocabulary.json (`make build`
 * refreshes both; tests keep them in step). Parsing and validating them at every start cost
 * about 6 ms of each `turnguard run`.
 *
 * Run `bun lib/config/embedded_config.ts` to write the files.
 */
import { writeFileSync } from "node:fs";
import embeddedToml from "../../anchors.toml" with { type: "text" };
import { EMBEDDED_PATH, parseConfigText } from "./config.ts";
import { formatKeyPath, locateKey } from "./toml_locate.ts";
import vocabularyToml from "../../vocabulary.toml" with { type: "text" };
import { parseVocabularyText, type StoredVocabulary, VOCABULARY_PATH } from "./vocabulary_file.ts";

/** Where the compiled defaults are kept. */
export const EMBEDDED_JSON = new URL("./embedded_config.json", import.meta.url);

/** What lib/config/embedded_config.json holds. */
export interface CompiledDefaults {
  /** The validated config (valibot's output, as JSON). */
  data: unknown;
  /** The line of each `anchor[i]` and `detector[i]` in anchors.toml. */
  keyLines: Record<string, number | null>;
}

/** Parses, validates and locates the embedded anchors.toml (what the JSON file must hold). */
export function compileDefaults(source: string = embeddedToml): CompiledDefaults {
  const { data } = parseConfigText(EMBEDDED_PATH, source);
  const keyLines: Record<string, number | null> = {};
  for (const table of ["anchor", "detector"] as const) {
    (data[table] ?? []).forEach((_, i) => {
      keyLines[formatKeyPath([table, i])] = locateKey(source, [table, i]);
    });
  }
  return JSON.parse(JSON.stringify({ data, keyLines }));
}

/** Where the validated vocabulary is kept (read by lib/cause/vocabulary.ts). */
export const VOCABULARY_JSON = new URL("../cause/vocabulary.json", import.meta.url);

/** Validates vocabulary.toml (what lib/cause/vocabulary.json must hold). */
export function compileVocabulary(source: string = vocabularyToml): StoredVocabulary {
  return JSON.parse(JSON.stringify(parseVocabularyText(VOCABULARY_PATH, source)));
}

if (import.meta.main) {
  writeFileSync(EMBEDDED_JSON, JSON.stringify(compileDefaults(), null, 2) + "\n");
  writeFileSync(VOCABULARY_JSON, JSON.stringify(compileVocabulary(), null, 2) + "\n");
}
