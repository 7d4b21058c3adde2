/**
 * The examples turnguard shows its users, found where they are written: every subcommand's
 * `--help` examples (lib/cli/command_help.ts) and every turnguard command line in a fenced
 * code block of README.md and docs/*.md. tests/e2e/doc_examples.test.ts runs each one.
 *
 * In a code block, a line that starts with `turnguard ` (or `$ turnguard `, a transcript,
 * whose output is the lines after it up to the next `$ `) is either a synopsis — it holds
 * `[`, `|` or `...`, as `turnguard log [NAME|SESSION] [--limit N]` — or an example; so is an
 * `acpx` line that starts turnguard as its agent. Lines ending in `\` continue on the next.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { COMMAND_HELP } from "../../lib/cli/command_help.ts";
import { ROOT } from "./cli.ts";

/** One command line shown to users. */
export interface ShownCommand {
  /** Where it is: `--help of scan`, `README.md`, `docs/JOURNAL.md`. */
  where: string;
  /** The command line, without a transcript's `$ `, continuations joined. */
  command: string;
  /** A transcript's shown output lines, [] when none is shown. */
  shown: string[];
  /** Its key in the test's table: `where: command`, with `#N` for the N-th repeat (from 0). */
  key: string;
}

/** The docs searched for examples. */
export function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort();
  return ["README.md", ...docs.map((f) => `docs/${f}`)];
}

const isSynopsis = (line: string) => /\[|\||\.\.\./.test(line);

/** Every turnguard command line of the docs' code blocks: synopses and examples apart. */
export function docCommands(): { synopses: ShownCommand[]; examples: ShownCommand[] } {
  const synopses: ShownCommand[] = [];
  const examples: ShownCommand[] = [];
  for (const file of docFiles()) {
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const block of text.matchAll(/^```[\w-]*\n([\s\S]*?)^```/gm)) {
      const lines = block[1].split("\n");
      for (let i = 0; i < lines.length; i++) {
        const transcript = lines[i].startsWith("$ turnguard ");
        // A client started with turnguard as its agent (docs/CLIENTS.md's are run by
        // tests/e2e/clients.test.ts).
        const client = file !== "docs/CLIENTS.md" && /^acpx .*turnguard /.test(lines[i]);
        if (!transcript && !client && !lines[i].startsWith("turnguard ")) continue;
        let command = lines[i].replace(/^\$ /, "");
        while (command.endsWith("\\") && i + 1 < lines.length) {
          command = command.slice(0, -1) + lines[++i].trim();
        }
        // A synopsis goes on in the indented lines under it.
        while (isSynopsis(command) && i + 1 < lines.length && /^\s+[[-]/.test(lines[i + 1])) {
          command += " " + lines[++i].trim();
        }
        const shown: string[] = [];
        while (transcript && i + 1 < lines.length && !lines[i + 1].startsWith("$ ")) {
          shown.push(lines[++i]);
        }
        while (shown.at(-1) === "") shown.pop();
        const entry = { where: file, command: command.trim(), shown, key: "" };
        (isSynopsis(command) ? synopses : examples).push(entry);
      }
    }
  }
  return { synopses, examples: keyed(examples) };
}

/** Every subcommand's `--help` examples. */
export function helpExamples(): ShownCommand[] {
  return keyed(
    Object.entries(COMMAND_HELP).flatMap(([name, help]) =>
      help.examples.map((e) => ({
        where: `--help of ${name}`,
        command: e.command,
        shown: [],
        key: "",
      }))
    ),
  );
}

function keyed(list: ShownCommand[]): ShownCommand[] {
  const total = new Map<string, number>();
  for (const e of list) {
    total.set(`${e.where}: ${e.command}`, (total.get(`${e.where}: ${e.command}`) ?? 0) + 1);
  }
  const seen = new Map<string, number>();
  return list.map((e) => {
    const base = `${e.where}: ${e.command}`;
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return { ...e, key: total.get(base)! > 1 ? `${base} #${n}` : base };
  });
}

/**
 * Whether `actual` has the shown lines in order, each whole: `…` stands for any text, a
 * line `...` (indented or not) for any lines, and a run of digits for any digits (pids, times, durations).
 */
export function showsAsDocumented(actual: string, shown: string[]): boolean {
  const pattern = shown.map((line) =>
    line.trim() === "..."
      ? "(?:.*\\n)*?"
      : line.split(/(…|\d+)/).map((part) =>
        part === "…"
          ? ".*?"
          : /^\d+$/.test(part)
          ? "\\d+"
          : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      ).join("") + "\\n"
  ).join("");
  return new RegExp(`^${pattern}$`).test(actual.endsWith("\n") ? actual : actual + "\n");
}
