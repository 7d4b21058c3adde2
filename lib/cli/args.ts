/**
 * Command-line parsing on node:util's parseArgs (the runtime built-in both Bun and Deno
 * ship), with turnguard's conventions: options first, then `--` (optional) and the agent
 * command, whose own flags are never read as turnguard's.
 */
import type { ParseArgsConfig } from "node:util";
import { TurnguardError, UsageError } from "../errors.ts";

/** The options table one subcommand accepts. */
export type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

/** Splits argv into turnguard's own part and the agent command after it. */
export function splitCommand(argv: readonly string[], options: OptionSpec): {
  own: string[];
  command: string[];
} {
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i];
    if (token === "--") return { own: argv.slice(0, i), command: argv.slice(i + 1) };
    if (!token.startsWith("-") || token === "-") {
      return { own: argv.slice(0, i), command: argv.slice(i) };
    }
    const name = token.replace(/^--?/, "").split("=")[0];
    const spec = options[name] ??
      Object.values(options).find((o) => o.short === name && token.length === 2);
    if (spec?.type === "string" && !token.includes("=")) i++;
  }
  return { own: [...argv], command: [] };
}

/**
 * `--help`/`-h` given to a subcommand: not an error, but it ends the command before it
 * runs; the entry point prints that subcommand's help and exits 0.
 */
export class HelpRequest extends TurnguardError {
  constructor(readonly subcommand: string) {
    super(`${subcommand} --help`, 0);
  }
}

/**
 * The value each flag that takes one is shown with, in `--help` (`--journal PATH`) and in
 * the error for a flag given without its value. A flag name means one kind of value in every
 * subcommand; a test holds this table equal to the string flags of every options table.
 */
export const FLAG_VALUES: Readonly<Record<string, string>> = {
  agent: "NAME",
  config: "PATH",
  "outcome-file": "PATH",
  timeout: "S",
  "turn-timeout": "S",
  "max-line-bytes": "N",
  grace: "S",
  var: "NAME=VALUE",
  journal: "PATH",
  name: "NAME",
  retries: "N",
  "retry-max-wait": "S",
  limit: "N",
  kind: "K",
  late: "N",
  profile: "NAME",
  record: "PATH",
};

/**
 * node:util's words for a string flag given without its value: at the end of the line
 * (`Option '--journal <value>' argument missing`), or followed by another flag (`Option
 * '--journal' argument is ambiguous.`), with the short name first when it has one
 * (`'-n, --limit <value>'`), or the flag as given (`'-n' argument is ambiguous`). The words
 * of Node's parseArgs (nodejs/node lib/internal/util/parse_args/parse_args.js:
 * checkOptionUsage, checkOptionLikeValue), which Bun's port (oven-sh/bun
 * src/bun.js/node/util/parse_args.zig) keeps; tests/e2e/cli_conventions.test.ts runs each form.
 */
const MISSING_VALUE =
  /^Option '(?:-\w, )?(--[\w-]+|-\w)(?: <value>)?' argument (?:missing|is ambiguous)/;

/** The long name of the flag a parseArgs error says was given without its value, or null. */
function flagWithoutValue(message: string, options: OptionSpec): string | null {
  const given = MISSING_VALUE.exec(message)?.[1];
  if (given === undefined) return null;
  if (given.startsWith("--")) return given.slice(2);
  return Object.keys(options).find((name) => options[name].short === given.slice(1)) ?? null;
}

/** The flag every subcommand takes. */
const HELP_OPTION = { help: { type: "boolean", short: "h" } } satisfies OptionSpec;

/**
 * parseArgs with one-line usage errors that name the subcommand and the flag, and suggest
 * the closest known flag to an unknown one. `--help`/`-h` throws HelpRequest.
 */
export function parseOptions<T extends OptionSpec>(
  subcommand: string,
  argv: string[],
  options: T,
  allowPositionals = false,
) {
  let parsed: ReturnType<typeof parseStrict<T>>;
  try {
    // `help` is read here and never reaches the subcommand, so its type stays T's.
    parsed = parseStrict(argv, { ...options, ...HELP_OPTION } as T, allowPositionals);
  } catch (err) {
    const message = (err as Error).message.split("\n")[0].replace(/\. To specify.*$/, "");
    const missing = flagWithoutValue(message, options);
    if (missing !== null) {
      throw new UsageError(
        `${subcommand}: --${missing} needs a value (${FLAG_VALUES[missing] ?? "VALUE"})`,
      );
    }
    const unknown = /^Unknown option '(-{1,2}[^']*)'/.exec(message)?.[1];
    const name = unknown?.replace(/^-{1,2}/, "").split("=")[0];
    const hint = name ? closestName(name, Object.keys(options)) : null;
    throw new UsageError(`${subcommand}: ${message}${hint ? ` (did you mean --${hint}?)` : ""}`);
  }
  if ((parsed.values as { help?: boolean }).help === true) throw new HelpRequest(subcommand);
  return parsed;
}

/**
 * parseArgs, loaded when there is something to parse: node:util costs about 1 ms and 4 MiB
 * at the start of a compiled binary, and `run -- CMD` without options of its own (the
 * common call in shell loops) has nothing for it. No option of turnguard has a default, so
 * an empty argv parses to no values.
 */
function parseStrict<T extends OptionSpec>(args: string[], options: T, allowPositionals: boolean) {
  if (args.length === 0) {
    return { values: {}, positionals: [] } as unknown as ReturnType<typeof strictParse<T>>;
  }
  return strictParse(args, options, allowPositionals);
}

function strictParse<T extends OptionSpec>(args: string[], options: T, allowPositionals: boolean) {
  const { parseArgs } = process.getBuiltinModule("node:util");
  return parseArgs({ args, options, strict: true, allowPositionals });
}

/**
 * The known name closest to an unknown one (flag `outcome-jsn` → `outcome-json`, command
 * `prxy` → `proxy`): one a few edits away, or one it is a prefix of; null when none is near.
 */
export function closestName(name: string, known: readonly string[]): string | null {
  let best: { flag: string; distance: number } | null = null;
  for (const flag of known) {
    const distance = flag.startsWith(name) ? 1 : editDistance(name, flag);
    if (
      distance <= Math.max(2, Math.floor(flag.length / 3)) &&
      distance < (best?.distance ?? Infinity)
    ) {
      best = { flag, distance };
    }
  }
  return best?.flag ?? null;
}

/** Levenshtein distance between two short strings. */
export function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/** The parsed values of an options table, typed from the table itself (no hand-written twin). */
export type OptionValues<T extends OptionSpec> = ReturnType<typeof parseOptions<T>>["values"];

/** Parses a positive number of seconds given to a flag. */
export function parseSeconds(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) {
    throw new UsageError(`${flag}: expected a number of seconds, got "${value}"`);
  }
  return n;
}

/** The environment as a plain record. */
export function envRecord(): Record<string, string | undefined> {
  return { ...process.env };
}
