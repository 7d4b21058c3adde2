/**
 * Log path patterns: `$HOME/.gemini/antigravity-cli/log/cli-*.log`. Environment variables
 * are expanded from the given environment (so tests can point HOME anywhere) and `*`, `?`
 * match within one path segment.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { errCode } from "./logfs.ts";

/**
 * Expands `$VAR`, `${VAR}`, `${VAR:-default}` (the default, itself expanded, when VAR is
 * unset or empty: `${CODEX_HOME:-$HOME/.codex}`) and a leading `~` from `env`; unset
 * variables expand to "".
 */
export function expandVars(pattern: string, env: Record<string, string | undefined>): string {
  const home = env.HOME ?? "";
  const withHome = pattern.startsWith("~/") ? home + pattern.slice(1) : pattern;
  return withHome.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_, a: string | undefined, fallback: string | undefined, b: string | undefined) => {
      const value = env[(a ?? b) as string];
      if (fallback !== undefined && !value) return expandVars(fallback, env);
      return value ?? "";
    },
  );
}

/** Compiles one path segment with `*` and `?` into an anchored RegExp. */
export function segmentRegExp(segment: string): RegExp {
  const body = segment.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(
    /\?/g,
    "[^/]",
  );
  return new RegExp(`^${body}$`);
}

/** What a directory listing failed with, for diagnostics. */
export interface GlobProblem {
  path: string;
  code: string;
}

/** The directory reader the glob needs; the real one wraps node:fs. */
export type ReadDir = (path: string) => string[];

const realReadDir: ReadDir = (path) => readdirSync(path);

/**
 * The files matching an absolute pattern, and the directories that could not be listed
 * (ENOENT: the agent has not run yet; EACCES: unreadable).
 */
export function glob(
  pattern: string,
  readDir: ReadDir = realReadDir,
): { paths: string[]; problems: GlobProblem[] } {
  const problems: GlobProblem[] = [];
  const segments = pattern.split("/");
  let bases = [segments[0] === "" ? "/" : segments[0]];
  for (const segment of segments.slice(1)) {
    if (segment === "") continue;
    if (!/[*?]/.test(segment)) {
      bases = bases.map((b) => join(b, segment));
      continue;
    }
    const re = segmentRegExp(segment);
    const next: string[] = [];
    for (const base of bases) {
      let names: string[];
      try {
        names = readDir(base);
      } catch (err) {
        problems.push({ path: base, code: errCode(err) });
        continue;
      }
      for (const name of names.sort()) if (re.test(name)) next.push(join(base, name));
    }
    bases = next;
  }
  return { paths: bases, problems };
}
