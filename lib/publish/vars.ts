/**
 * Turn variables — `channel`, `reply_to` and any other a bridge needs — and the placeholders
 * (`{channel}`) they fill in a fallback command's arguments. Variables come from
 * `TURNGUARD_VAR_<NAME>` environment variables, then `--var name=value` flags, then the
 * `session/prompt` request's `_meta.turnguard` object (a bridge can set them per prompt);
 * a later source wins. Names are case-insensitive (kept lower-case). Pure.
 */
import { isObject } from "../acp/jsonrpc.ts";
import { UsageError } from "../errors.ts";

/** Turn variables by lower-case name. */
export type TurnVars = ReadonlyMap<string, string>;

/** What a variable name may be: letters, digits and `_`, not starting with a digit. */
export const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Environment variables with this prefix are turn variables. */
export const ENV_PREFIX = "TURNGUARD_VAR_";

/** `{name}`, or the escapes `{{` and `}}` for literal braces. */
const PLACEHOLDER = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Parses `--var name=value` flags; a malformed one is a usage error. */
export function parseVarFlags(values: readonly string[]): Map<string, string> {
  const vars = new Map<string, string>();
  for (const item of values) {
    const eq = item.indexOf("=");
    const name = eq === -1 ? item : item.slice(0, eq);
    if (eq === -1 || !VAR_NAME.test(name)) {
      throw new UsageError(
        `--var: expected NAME=VALUE with NAME of letters, digits and _, got "${item}"`,
      );
    }
    vars.set(name.toLowerCase(), item.slice(eq + 1));
  }
  return vars;
}

/** Turn variables from `TURNGUARD_VAR_<NAME>` environment variables. */
export function envVars(env: Readonly<Record<string, string | undefined>>): Map<string, string> {
  const vars = new Map<string, string>();
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith(ENV_PREFIX) || value === undefined) continue;
    const name = key.slice(ENV_PREFIX.length);
    if (VAR_NAME.test(name)) vars.set(name.toLowerCase(), value);
  }
  return vars;
}

/**
 * Turn variables from a `session/prompt` request's `_meta.turnguard` object: strings,
 * numbers and booleans are taken as text; anything else is skipped with a diagnostic.
 */
export function metaVars(meta: unknown, diagnostics: string[]): Map<string, string> {
  const vars = new Map<string, string>();
  if (!isObject(meta) || meta.turnguard === undefined) return vars;
  if (!isObject(meta.turnguard)) {
    diagnostics.push("publish: _meta.turnguard is not an object; its variables are ignored");
    return vars;
  }
  for (const [name, value] of Object.entries(meta.turnguard)) {
    const ok = typeof value === "string" || typeof value === "number" ||
      typeof value === "boolean";
    if (!VAR_NAME.test(name) || !ok) {
      diagnostics.push(`publish: _meta.turnguard.${name} is not a usable variable; skipped`);
      continue;
    }
    vars.set(name.toLowerCase(), String(value));
  }
  return vars;
}

/** Layers variable sources; a later layer's value wins. */
export function layerVars(...layers: readonly TurnVars[]): Map<string, string> {
  const vars = new Map<string, string>();
  for (const layer of layers) for (const [k, val] of layer) vars.set(k, val);
  return vars;
}

/** The placeholder names an argument uses, lower-case. */
export function placeholdersIn(arg: string): string[] {
  return [...arg.matchAll(PLACEHOLDER)].flatMap((m) => m[1] ? [m[1].toLowerCase()] : []);
}

/** The filled argv, or the placeholders that have no variable. */
export type FilledArgv = { ok: true; argv: string[] } | { ok: false; missing: string[] };

/**
 * Fills `{name}` placeholders in each argument separately, in one pass: a value is never
 * scanned again, so text containing `{channel}`, quotes or `$(…)` arrives as it is.
 * Every argument stays exactly one argument; nothing is split or globbed.
 */
export function fillPlaceholders(argv: readonly string[], vars: TurnVars): FilledArgv {
  const missing = new Set<string>();
  const out = argv.map((arg) =>
    arg.replace(PLACEHOLDER, (token, name: string | undefined) => {
      if (name === undefined) return token[0];
      const value = vars.get(name.toLowerCase());
      if (value === undefined) {
        missing.add(name.toLowerCase());
        return token;
      }
      return value;
    })
  );
  return missing.size > 0 ? { ok: false, missing: [...missing] } : { ok: true, argv: out };
}
