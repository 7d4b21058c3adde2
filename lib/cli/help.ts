/** The help text and version, kept in one place for `--help` and the README. */

/** turnguard's version. */
export const VERSION = "0.1.0";

/** `turnguard --help`. */
export const HELP = `turnguard ${VERSION} — every agent turn gets its true outcome

Usage:
  turnguard run    [--agent NAME] [--config PATH] [--outcome-json] [--outcome-file PATH]
                   [--verbose] [--journal PATH | --no-journal] [--name NAME]
                   [--retries N] [--retry-max-wait S] -- CMD [ARGS...]
  turnguard proxy  [--agent NAME] [--config PATH] [--outcome-file PATH] [--turn-timeout S]
                   [--rewrite-errors] [--strict-turns] [--max-line-bytes N] [--grace S] [--verbose]
                   [--publish-fallback] [--var NAME=VALUE]... [--journal PATH | --no-journal]
                   [--name NAME] [--retries N] [--retry-max-wait S] -- AGENT_CMD [ARGS...]
  turnguard schema
  turnguard wait   [NAME|SESSION] [--print | --json] [--timeout S] [--journal PATH]
  turnguard log    [NAME|SESSION] [--limit N] [--json] [--journal PATH]
  turnguard retry  NAME|SESSION [--journal PATH]
  turnguard scan   [--agent NAME] [--config PATH] [--kind auto|log|text|error|records] [--json]
                   FILE...|-
  turnguard explain [--agent NAME] [--config PATH] [--kind auto|log|text|error|records] [--json]
                   TEXT|-
  turnguard check  [--config PATH] [--json]

Exit codes (run): the agent's own when it failed by itself; 128+N when it died of
signal N; 1 when turnguard surfaced a failure the agent swallowed; 2 for turnguard's
own usage or config errors; 126/127 when the command cannot be run or is not found.
Exit codes (proxy): the agent's exit status (128+N for signal N); 2 for usage or
config errors; 126/127 when the agent command cannot be run or is not found.
Exit codes (wait): 0 the turn ended ok (or empty, refused, truncated, cancelled); 1 it
failed; 2 usage errors; 3 timed out waiting; 4 no such session; 5 incomplete (its
process is gone and a record of it was cut short); 6 the journal is not a regular file
(log and retry too).
Exit codes (retry): 0 the owner was signalled; 1 no retry waits; 2 usage errors; 4 no
such session; 5 the process that owned the retry is gone.
Exit codes (scan, explain): 0 an anchor matched; 1 none did; 2 usage or config errors.
Exit codes (check): 0 the config and every plugin load; 2 with the first error.
`;
