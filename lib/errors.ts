/** turnguard's own errors: small, honest, one line each, with a distinct exit code. */

/** Exit codes of turnguard's own failures (agent outcomes use their own codes). */
export const EXIT = {
  /** The turn failed, or a swallowed backend failure was surfaced. */
  failed: 1,
  /** Bad command line or bad configuration: nothing was run. */
  usage: 2,
  /** `run --timeout` expired (as timeout(1) exits). */
  timeout: 124,
  /** A wrapper's (run, proxy) own usage or config error, as env, timeout and nice exit. */
  wrapperUsage: 125,
  /** The agent command exists but cannot be executed. */
  notExecutable: 126,
  /** The agent command was not found. */
  notFound: 127,
} as const;

/** Base class: a one-line message and the exit code the CLI uses for it. */
export class TurnguardError extends Error {
  constructor(message: string, readonly exitCode: number) {
    super(message);
    this.name = new.target.name;
  }
}

/** A bad command line: unknown flag, missing value, missing command. */
export class UsageError extends TurnguardError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** A bad config file or plugin, named by file, line and key path. */
export class ConfigError extends TurnguardError {
  constructor(
    readonly file: string,
    readonly line: number | null,
    readonly key: string | null,
    readonly detail: string,
  ) {
    super(
      `${file}${line !== null ? `:${line}` : ""}: ${key ? `${key}: ` : ""}${detail}`,
      EXIT.usage,
    );
  }
}

/** A one-line text for any thrown value. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
