/**
 * Publish commands in tool calls: where a call's command line is (rawInput or title), the
 * simple commands inside it (shell wrappers such as `bash -lc '…'` opened), and whether one
 * of them runs a given publish command and to which channel. Shared by the built-in buzz
 * detector, declarative `[[detector]]` tables and the printed-command unwrapper. Pure.
 */
import type { Detection, ToolCallState } from "../plugin/api.ts";
import { effectiveArgv, parseShell, programName, type SimpleCommand } from "./shell_words.ts";
import { isObject } from "../acp/jsonrpc.ts";

/** The shape of a publish command: program, subcommand words, and the flags naming the channel. */
export interface PublishCommandSpec {
  /** Program basename, e.g. `buzz`. */
  program: string;
  /** Subcommand words that must follow it, e.g. `["messages", "send"]`. */
  subcommand: readonly string[];
  /** Flags whose value is the channel (`--channel X` or `--channel=X`). */
  channelFlags: readonly string[];
}

/** A publish command found in argv: the channel it names (null: none, or not knowable). */
export interface PublishMatch {
  channel: string | null;
  /** Index in argv of the first word after the subcommand. */
  argsAt: number;
}

/** Shells whose `-c SCRIPT` runs a script the agent wrote inline. */
const SHELLS = new Set(["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"]);

/** How deep `bash -c "bash -c '…'"` is followed. */
const MAX_DEPTH = 4;

function isArgv(value: unknown): value is string[] {
  return Array.isArray(value) && value.length > 0 && value.every((x) => typeof x === "string");
}

/**
 * Where a tool call says what it ran: `rawInput` as a string, `rawInput.command` (string or
 * argv), `rawInput.cmd`, `rawInput.arguments.command`; the title only when none is there
 * (agents often show the command as the title, in backquotes).
 */
export function callCommandSources(call: ToolCallState): Array<string | string[]> {
  const sources: Array<string | string[]> = [];
  const add = (value: unknown) => {
    if (typeof value === "string" && value.trim() !== "") sources.push(value);
    else if (isArgv(value)) sources.push(value);
  };
  const input = call.rawInput;
  if (typeof input === "string") add(input);
  else if (isArgv(input)) add(input);
  else if (isObject(input)) {
    add(input.command);
    add(input.cmd);
    if (isObject(input.arguments)) add(input.arguments.command);
  }
  if (sources.length === 0 && typeof call.title === "string") {
    const title = call.title.trim();
    const fenced = /^`+([^`].*?)`+$/s.exec(title);
    add(fenced ? fenced[1] : title);
  }
  return sources;
}

/** The script a shell wrapper runs (`bash -lc SCRIPT`, `sh -c SCRIPT`, `eval …`), or null. */
function wrappedScript(argv: readonly string[]): string | null {
  if (argv.length === 0) return null;
  if (argv[0] === "eval") return argv.slice(1).join(" ");
  if (!SHELLS.has(programName(argv[0]))) return null;
  for (let i = 1; i < argv.length; i++) {
    const opt = argv[i];
    if (!opt.startsWith("-") || opt === "-" || opt === "--") return null;
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(opt)) return argv[i + 1] ?? null;
  }
  return null;
}

/**
 * Every simple command a command line or argv runs, with assignments and wrappers removed
 * from each argv and shell wrappers opened. An argv array is one command, as exec'd.
 */
export function simpleCommands(source: string | readonly string[], depth = 0): SimpleCommand[] {
  const commands: SimpleCommand[] = typeof source === "string"
    ? parseShell(source).flat()
    : [{ argv: [...source], redirects: [] }];
  const out: SimpleCommand[] = [];
  for (const command of commands) {
    const argv = effectiveArgv(command.argv);
    const script = wrappedScript(argv);
    if (script !== null && depth < MAX_DEPTH) out.push(...simpleCommands(script, depth + 1));
    else out.push({ argv, redirects: command.redirects });
  }
  return out;
}

/** The value of `--flag X` or `--flag=X` in `args`, or undefined when the flag is absent. */
export function flagValue(args: readonly string[], flags: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") break;
    for (const flag of flags) {
      if (arg === flag) return args[i + 1] ?? "";
      if (arg.startsWith(flag + "=")) return arg.slice(flag.length + 1);
    }
  }
  return undefined;
}

/**
 * Whether `argv` runs the publish command `spec`. Global options may stand between the
 * program and its subcommand (`buzz --relay URL messages send`); any other word there means
 * another subcommand (`buzz messages get`, `buzz reactions add`). A channel written as a
 * shell expansion (`$CHANNEL`, `$(…)`) is not knowable and reads as no channel.
 */
export function matchPublishArgv(
  argv: readonly string[],
  spec: PublishCommandSpec,
): PublishMatch | null {
  if (argv.length === 0 || programName(argv[0]) !== spec.program) return null;
  let k = 0;
  let optionValueMayFollow = false;
  let j = 1;
  for (; j < argv.length && k < spec.subcommand.length; j++) {
    const word = argv[j];
    if (word === spec.subcommand[k]) {
      k++;
      continue;
    }
    if (k > 0 || word === "--") return null;
    if (word.startsWith("-") && word.length > 1) {
      optionValueMayFollow = !word.includes("=");
    } else if (optionValueMayFollow) {
      optionValueMayFollow = false;
    } else {
      return null;
    }
  }
  if (k < spec.subcommand.length) return null;
  const raw = flagValue(argv.slice(j), spec.channelFlags);
  const channel = raw === undefined || raw === "" || /[$`]/.test(raw) ? null : raw;
  return { channel, argsAt: j };
}

/**
 * The detection for one tool call against a publish command spec: the first simple command
 * in the call's command sources that runs it. The building block of command detectors.
 */
export function detectCommand(call: ToolCallState, spec: PublishCommandSpec): Detection | null {
  for (const source of callCommandSources(call)) {
    for (const command of simpleCommands(source)) {
      const match = matchPublishArgv(command.argv, spec);
      if (match) return { publish: true, channel: match.channel };
    }
  }
  return null;
}
