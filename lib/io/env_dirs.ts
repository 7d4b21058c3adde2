/**
 * The base directories turnguard reads config from and writes its journal under: `HOME`,
 * `XDG_CONFIG_HOME`, `XDG_STATE_HOME`. Only absolute values count: a relative one (`HOME=.`)
 * would resolve against the working directory and load config — and the code plugins it
 * names — from wherever turnguard happens to run. Such a value is ignored, with a
 * diagnostic; an empty value means unset (the XDG rule).
 */
import { isAbsolute } from "node:path";

/** The variables that name base directories. */
export const DIR_VARS = ["HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"] as const;
/** One of them. */
export type DirVar = typeof DIR_VARS[number];

type Env = Readonly<Record<string, string | undefined>>;

/** The variable's value when it is an absolute path; null when unset, empty or relative. */
export function absoluteDir(env: Env, name: DirVar): string | null {
  const value = env[name];
  return value && isAbsolute(value) ? value : null;
}

/** The account's home directory from the user database, when it has an absolute one. */
function accountHome(): string | null {
  try {
    // node:os only when HOME is not set (it costs about 1 ms at every start).
    const home = process.getBuiltinModule("node:os").userInfo().homedir;
    return home && isAbsolute(home) ? home : null;
  } catch {
    return null;
  }
}

/** The home directory: an absolute `HOME`, else the account's; null when neither exists. */
export function homeDir(env: Env, account: () => string | null = accountHome): string | null {
  return absoluteDir(env, "HOME") ?? account();
}

/** One line per base-directory variable that is set to a relative path (and so ignored). */
export function dirVarProblems(env: Env): string[] {
  return DIR_VARS.filter((name) => env[name] && !isAbsolute(env[name]!)).map((name) =>
    `${name}=${JSON.stringify(env[name])} is not an absolute path; it is ignored`
  );
}
