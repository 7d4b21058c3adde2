/**
 * A TOML file's text parsed and validated by a valibot schema, with every error one line
 * naming the file, line and key path (ConfigError): the config files (lib/config/config.ts)
 * and the provider vocabulary (lib/config/vocabulary_file.ts) alike.
 */
import { parse as parseToml, TomlError } from "smol-toml";
import * as v from "valibot";
import { ConfigError } from "../errors.ts";
import { formatKeyPath, type KeyStep, locateKey } from "./toml_locate.ts";

/** `source` parsed and checked against `schema`; throws ConfigError (file, line, key). */
export function parseTomlWith<S extends v.GenericSchema>(
  path: string,
  source: string,
  schema: S,
): v.InferOutput<S> {
  let raw: unknown;
  try {
    raw = parseToml(source);
  } catch (err) {
    if (err instanceof TomlError) {
      throw new ConfigError(path, err.line, null, err.message.split("\n")[0]);
    }
    throw new ConfigError(path, null, null, String(err));
  }
  const result = v.safeParse(schema, raw);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const keyPath: KeyStep[] = (issue.path ?? []).map((p) => p.key as KeyStep);
  const detail = issue.kind === "schema" && issue.type === "strict_object"
    ? `unknown key \`${String(keyPath.at(-1))}\``
    : issue.message;
  throw new ConfigError(path, locateKey(source, keyPath), formatKeyPath(keyPath), detail);
}
