/**
 * Command-line parsing on node:util's parseArgs (the runtime built-in both Bun and Deno
 * ship), with turnguard's conventions: options first, then `--` (optional) and the agent
 * command, whose own flags are never read as turnguard's.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "../errors.ts";

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

/** parseArgs with one-line usage errors that name the subcommand and the flag. */
export function parseOptions<T extends OptionSpec>(
  subcommand: string,
  argv: string[],
  options: T,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals });
  } catch (err) {
    const message = (err as Error).message.split("\n")[0].replace(/\. To specify.*$/, "");
    throw new UsageError(`${subcommand}: ${message}`);
  }
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
