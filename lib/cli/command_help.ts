/**
 * Each subcommand's `--help`: what it does, its flags with their values and defaults, its
 * exit codes and its examples. The flag names here are the ones shell completions offer; a
 * test holds them equal to each subcommand's real options table, and another runs every
 * example (tests/e2e/help_examples.test.ts) and checks it does what its line says.
 */
import { DEFAULT_INSPECT_LIMIT } from "../acp/lines.ts";
import { DEFAULT_RETRY_MAX_WAIT_S } from "../retry/policy.ts";
import { FLAG_VALUES } from "./args.ts";

/** `--fail-fast`, as `run` and `proxy` say it. */
const FAIL_FAST = "end a turn as soon as the agent's logs or session records show it " +
  "retrying a cause retrying cannot cure (quota, auth, model, context), with that error " +
  "(config fail_fast = true)";

/** One example of a subcommand: the command line as typed, and what it does. */
export interface Example {
  command: string;
  does: string;
}

/** One subcommand's help. */
export interface CommandHelp {
  summary: string;
  usage: string;
  /** Flag name (without `--`) → what it does and its default. */
  flags: Record<string, string>;
  exit: string;
  examples: Example[];
}

const CONFIG = "config file (default: $TURNGUARD_CONFIG, else ~/.config/turnguard/turnguard.toml)";
const JOURNAL = {
  journal:
    "journal file (default: $TURNGUARD_JOURNAL, else $XDG_STATE_HOME/turnguard/journal.jsonl)",
  "no-journal": "journal nothing (also config `journal = false`)",
  name: "the label `wait`, `log` and `retry` find the session by (default: the profile's name)",
  retries: "retry a retryable failure that wrote nothing, up to N times (default: 0)",
  "retry-max-wait":
    `longest wait before a retry, in seconds (default: ${DEFAULT_RETRY_MAX_WAIT_S})`,
};
const KEEP_DAEMONS = "leave running what the agent started outside its process group " +
  "(setsid daemons); by default they are stopped with it (also config `keep_daemons = true`)";
/** The exit codes run and proxy share, after their own first lines (env, timeout, nice). */
const WRAPPER_EXIT = (who: string) =>
  `125  turnguard's own usage or config error: nothing was run
  126  ${who} was found but cannot be executed (not executable, missing interpreter)
  127  ${who} was not found`;
const SCAN_FLAGS = {
  agent: "the agent profile whose anchors apply (default: every anchor)",
  config: CONFIG,
  kind: "how input is read: auto, log, text, error, or records (an agent's session record " +
    "file, with --agent; default: auto)",
  json: "print JSON instead of text",
};

/** Every subcommand's help, by name. */
export const COMMAND_HELP: Record<string, CommandHelp> = {
  run: {
    summary: "Runs a print-mode agent command; its output passes through byte for byte, and a " +
      "failure it swallowed (exit 0, empty output, cause only in its logs) is surfaced.",
    usage: "turnguard run [OPTIONS] -- CMD [ARGS...]",
    flags: {
      agent: "the agent profile (default: chosen by the command's basename, else generic)",
      config: CONFIG,
      "outcome-json": "keep the agent's stdout and print the Outcome as JSON instead",
      "outcome-file": "append the Outcome as one JSON line to this file",
      timeout: "stop the agent after S seconds: SIGTERM, then SIGKILL 5 s later " +
        "(status failed, category timeout, exit 124; default: no limit)",
      "fail-fast": FAIL_FAST,
      "keep-daemons": KEEP_DAEMONS,
      verbose: "print turnguard's diagnostics on stderr",
      ...JOURNAL,
    },
    exit: `the agent's own status when it failed by itself; 128+N when it died of signal N;
  0    the turn ended ok, or honestly empty
  1    turnguard surfaced a failure the agent swallowed
  124  --timeout expired: the agent was stopped
  ${WRAPPER_EXIT("the command")}`,
    examples: [{
      command: "turnguard run --timeout 600 -- agy --print 'fix the failing test'",
      does: "runs agy for at most 10 minutes; a failure it swallowed is named on stderr, exit 1",
    }],
  },
  proxy: {
    summary: "A transparent ACP stdio proxy: an editor or bridge spawns it instead of the " +
      "agent; every turn gets its true outcome, a swallowed backend failure an error response.",
    usage: "turnguard proxy [OPTIONS] -- AGENT_CMD [ARGS...]\n" +
      "       turnguard proxy --chain [OPTIONS]   (a link of a conductor's proxy chain)",
    flags: {
      agent: "the agent profile (default: chosen by the command's basename, else generic)",
      chain: "be a link of an ACP conductor's proxy chain: the successor is reached " +
        "through the conductor, no agent command (docs/PROXY.md)",
      profile: "the agent profile, as --agent; in a chain, names the agent whose logs and " +
        "session records are read (default: none are read)",
      config: CONFIG,
      "outcome-file": "append each turn's Outcome as one JSON line to this file",
      record: "write the session as a recording to FILE (0600) for `turnguard replay`: the " +
        "whole wire, prompts and replies included, the agent's stderr, and what its logs " +
        "and session records gained under HOME (docs/PLUGINS.md)",
      "turn-timeout": "cancel a turn silent for S seconds and answer it with an error " +
        "(default: none)",
      "rewrite-errors": "rewrite the agent's own error responses with the decided cause",
      "strict-turns": "answer a turn whose reply was cut off (truncated or refused) with an " +
        "error carrying the partial text, instead of the agent's stopReason",
      "fail-fast": FAIL_FAST,
      "recover-replies": "send the client a final answer the agent recorded in its session " +
        "records but never streamed, as the turn's last message before its response " +
        "(docs/PROXY.md)",
      "max-line-bytes": `longest message inspected, in bytes (default: ${DEFAULT_INSPECT_LIMIT})`,
      grace: "seconds between EOF, SIGTERM and SIGKILL when the client leaves (default: 5)",
      "keep-daemons": KEEP_DAEMONS,
      verbose: "print turnguard's diagnostics on stderr",
      "publish-fallback": "arm the publish fallback of the agent's profile",
      var: "set a turn variable NAME=VALUE (repeatable), e.g. channel, reply_to",
      ...JOURNAL,
    },
    exit: `the agent's own status when it exits (128+N when it died of signal N); a failed turn
  is answered with a JSON-RPC error, not an exit code
  ${WRAPPER_EXIT("the agent command")}` +
      "\n  When the agent cannot be started, the client's first requests are answered " +
      "with a JSON-RPC error naming the command and the reason.",
    examples: [{
      command: "turnguard proxy --agent gemini -- gemini --experimental-acp",
      does: "speaks ACP on stdio in gemini's place, with the gemini profile",
    }],
  },
  wait: {
    summary: "Waits for a session's last turn in the journal and reports its outcome (and " +
      "the retry that waits); while it runs, each retry its agent makes on its own is told " +
      "on stderr.",
    usage: "turnguard wait [NAME|SESSION] [OPTIONS]",
    flags: {
      print: "print the turn's reply text",
      json: "print the turn as JSON",
      timeout: "give up after S seconds (default: wait for ever)",
      journal: JOURNAL.journal,
    },
    exit: `0 the turn ended (ok, empty, refused, truncated, cancelled); 1 it failed;
  2 usage error; 3 timed out waiting; 4 no such session; 5 incomplete (its process is gone
  and a record of it was cut short); 6 the journal is not a regular file`,
    examples: [{
      command: "turnguard wait nightly --print",
      does: "waits for the latest turn of the session named nightly and prints its reply",
    }],
  },
  log: {
    summary: "Lists the journal's latest turns, newest last.",
    usage: "turnguard log [NAME|SESSION] [OPTIONS]",
    flags: {
      limit: "how many turns (-n; default: 20)",
      json: "one JSON object per line",
      journal: JOURNAL.journal,
    },
    exit: "0 listed; 2 usage error; 4 no such session; 6 the journal is not a regular file",
    examples: [{ command: "turnguard log -n 5", does: "lists the 5 latest turns" }],
  },
  retry: {
    summary: "Runs the retry that waits for a session's latest turn now.",
    usage: "turnguard retry NAME|SESSION [OPTIONS]",
    flags: { journal: JOURNAL.journal },
    exit: `0 the owner was signalled; 1 no retry waits; 2 usage error; 4 no such session;
  5 the process that owned the retry is gone; 6 the journal is not a regular file`,
    examples: [{
      command: "turnguard retry nightly",
      does: "runs now the retry that waits for nightly's latest turn",
    }],
  },
  scan: {
    summary: "Scans log files (or stdin) with the anchors and prints what matched.",
    usage: "turnguard scan [OPTIONS] FILE...|-",
    flags: SCAN_FLAGS,
    exit: "0 an anchor matched; 1 none did; 2 usage or config error",
    examples: [{
      command: "turnguard scan --agent agy ~/.gemini/antigravity-cli/log/cli-*.log",
      does: "every failure agy's logs hold, with its anchor, category, file and line",
    }],
  },
  explain: {
    summary: "Shows which anchors were tried on an input, what each said, and why the " +
      "winner won; several inputs in turn (--json: one document per line).",
    usage: "turnguard explain [OPTIONS] TEXT|- [TEXT...]",
    flags: SCAN_FLAGS,
    exit: "0 an anchor matched (every input); 1 none did (for one input); 2 usage or config error",
    examples: [{
      command: "turnguard explain --kind text 'HTTP 429 Too Many Requests'",
      does: "generic.rate-limit wins: category rate_limit, retry with backoff",
    }, {
      command: "turnguard explain 'HTTP 429 Too Many Requests'",
      does: "read as a log line, which no anchor matches: winner none, exit 1",
    }],
  },
  check: {
    summary: "Validates the config and loads every plugin as run and proxy would; prints a " +
      "short summary (the full listing with --verbose).",
    usage: "turnguard check [OPTIONS]",
    flags: {
      config: CONFIG,
      json: "print the full report as JSON",
      verbose: "list every profile's anchors and every detector",
    },
    exit: "0 the config and every plugin load; 2 with the first error",
    examples: [{
      command: "turnguard check --config examples/agents/turnguard.toml --verbose",
      does: "loads the example agent's profile with the built-in ones and lists every anchor",
    }],
  },
  replay: {
    summary: "Runs a recording (proxy --record FILE) through a real proxy with your config " +
      "and prints each turn's Outcome and why; no agent needed.",
    usage: "turnguard replay [OPTIONS] FILE",
    flags: {
      agent: "the agent profile (default: the one the recording names, else by its command)",
      config: CONFIG,
      json: "print each Outcome as one JSON line",
      late: "the agent's late record writes come N times as late as recorded (default: 1)",
      verbose: "print each turn's diagnostics (why)",
      "agent-side": "play the recording's agent side on stdio (what the proxy runs)",
      "fail-fast": "replay at recorded times behind `proxy --fail-fast`: shows whether it " +
        "would have ended a turn the agent kept retrying, and when",
      "recorded-times": "with --agent-side: play each agent line and file write as long " +
        "after the client line before it as recorded",
    },
    exit: "0 the recording was replayed; 2 usage, config or recording error",
    examples: [{
      command: "turnguard replay --verbose examples/recordings/codex-overloaded-then-ok.jsonl",
      does: "replays a recorded codex-acp session (an overloaded backend, then a clean turn) " +
        "and prints each turn's Outcome and its diagnostics",
    }],
  },
  schema: {
    summary: "Prints the JSON Schema of the Outcome (v1).",
    usage: "turnguard schema",
    flags: {},
    exit: "0",
    examples: [{
      command: "turnguard schema > outcome.schema.json",
      does: "writes the Outcome's JSON Schema to a file",
    }],
  },
  types: {
    summary: "Prints the TypeScript declarations of the plugin API, for plugin authors " +
      "without a source checkout.",
    usage: "turnguard types",
    flags: {},
    exit: "0",
    examples: [{
      command: "turnguard types > turnguard.d.ts",
      does: "writes the declarations a plugin imports its types from",
    }],
  },
  completions: {
    summary: "Prints a shell completion script.",
    usage: "turnguard completions bash|zsh|fish",
    flags: {},
    exit: "0; 2 for an unknown shell",
    examples: [{
      command: "source <(turnguard completions bash)",
      does: "completes turnguard's commands and flags in this bash session",
    }],
  },
};

/** A flag as its help shows it: `--journal PATH`, `--verbose`. */
const flagWithValue = (flag: string) =>
  FLAG_VALUES[flag] === undefined ? `--${flag}` : `--${flag} ${FLAG_VALUES[flag]}`;

/** The `--help` text of one subcommand. */
export function formatCommandHelp(name: string, help: CommandHelp): string {
  const shown = Object.keys(help.flags).map(flagWithValue);
  const width = Math.max(6, ...shown.map((f) => f.length));
  const flags = Object.values(help.flags).map((text, i) => `  ${shown[i].padEnd(width)}  ${text}`);
  flags.push(`  ${"--help".padEnd(width)}  this help (-h)`);
  return [
    `turnguard ${name}: ${help.summary}`,
    "",
    `Usage: ${help.usage}`,
    "",
    "Options:",
    ...flags,
    "",
    "Exit codes:",
    `  ${help.exit}`,
    "",
    help.examples.length === 1 ? "Example:" : "Examples:",
    ...help.examples.flatMap((e) => [`  ${e.command}`, `      ${e.does}`]),
    "",
  ].join("\n");
}
