/** The help text and version, kept in one place for `--help` and the README. */

/** turnguard's version. */
export const VERSION = "0.1.0";

/** `turnguard --help`. */
export const HELP = `turnguard ${VERSION} — every agent turn gets its true outcome

Usage:
  turnguard run    [--agent NAME] [--config PATH] [--outcome-json] [--outcome-file PATH]
                   [--verbose] -- CMD [ARGS...]
  turnguard schema

Exit codes (run): the agent's own when it failed by itself; 128+N when it died of
signal N; 1 when turnguard surfaced a failure the agent swallowed; 2 for turnguard's
own usage or config errors; 126/127 when the command cannot be run or is not found.
`;
