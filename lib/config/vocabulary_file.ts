/**
 * vocabulary.toml read and validated: the schema of lib/cause/vocabulary.ts, plus what a
 * schema cannot see across rows and modules: ids are unique, a regex is linear
 * (lib/config/regex_risk.ts), a row's `retryable` is what its category means to the retry
 * policy, and status-only rows of one status agree. Every error is one line naming the file,
 * line and key (ConfigError). Run at build time (lib/config/embedded_config.ts), so the
 * binary only reads the stored result.
 */
import { ConfigError } from "../errors.ts";
import { isRetryable } from "../core/retry_hint.ts";
import { type StoredSignature, tierOf, VocabularyFileSchema } from "../cause/vocabulary.ts";
import { regexRisk } from "./regex_risk.ts";
import { parseTomlWith } from "./toml_file.ts";
import { formatKeyPath, type KeyStep, locateKey } from "./toml_locate.ts";

/** The path shown for the built-in vocabulary. */
export const VOCABULARY_PATH = "vocabulary.toml";

/** What lib/cause/vocabulary.json holds. */
export interface StoredVocabulary {
  signature: StoredSignature[];
}

/** Parses and validates vocabulary.toml's text; throws ConfigError naming file/line/key. */
export function parseVocabularyText(path: string, source: string): StoredVocabulary {
  const file = parseTomlWith(path, source, VocabularyFileSchema());
  const fail = (keyPath: readonly KeyStep[], detail: string): never => {
    throw new ConfigError(path, locateKey(source, keyPath), formatKeyPath(keyPath), detail);
  };
  const rows = file.signature;
  const ids = new Map<string, number>();
  const statusCategory = new Map<number, { category: string; i: number }>();
  rows.forEach((row, i) => {
    const at: KeyStep[] = ["signature", i];
    const first = ids.get(row.id);
    if (first !== undefined) fail([...at, "id"], `id ${row.id} is also signature[${first}]'s`);
    ids.set(row.id, i);
    const risk = row.regex === undefined ? null : regexRisk(row.regex);
    if (risk !== null) fail([...at, "regex"], risk);
    const policy = isRetryable(row.category, null);
    if (row.retryable !== policy) {
      fail(
        [...at, "retryable"],
        `retryable = ${row.retryable}, but a ${row.category} failure with no reset time is ${
          policy ? "" : "not "
        }retried (lib/core/retry_hint.ts)`,
      );
    }
    if (tierOf(row) === "status") {
      const seen = statusCategory.get(row.status!);
      if (seen && seen.category !== row.category) {
        fail(
          [...at, "category"],
          `status ${row.status} is ${seen.category} in signature[${seen.i}]; a status alone means one thing`,
        );
      }
      statusCategory.set(row.status!, { category: row.category, i });
    }
  });
  return {
    signature: rows.map((row, i) => ({ ...row, line: locateKey(source, ["signature", i]) })),
  };
}
