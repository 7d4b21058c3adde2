/**
 * Log path patterns: `$HOME/.gemini/antigravity-cli/log/cli-*.log`. Environment variables
 * are expanded from the given environment (so tests can point HOME anywhere) and `*`, `?`
 * match within one path segment.
 */
import { opendirSync } from "node:fs";
import { join } from "node:path";
import { errCode } from "./bounded_read.ts";

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

/**
 * Most entries read of one directory: an agent can fill the directory a pattern lists, and
 * the listing runs on the relay's thread (it opens no file an agent could hold, only the
 * directory). A directory this full is reported and read no further.
 */
export const MAX_DIR_ENTRIES = 65536;

/** The problem code of a directory cut at MAX_DIR_ENTRIES. */
export const TOO_MANY_ENTRIES = "TOO_MANY_ENTRIES";

/** Lists at most MAX_DIR_ENTRIES names of a directory (in the directory's own order). */
export const realReadDir: ReadDir = (path) => {
  const dir = opendirSync(path);
  const names: string[] = [];
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      names.push(entry.name);
      if (names.length >= MAX_DIR_ENTRIES) break;
    }
  } finally {
    dir.closeSync();
  }
  return names;
};

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
      if (names.length >= MAX_DIR_ENTRIES) problems.push({ path: base, code: TOO_MANY_ENTRIES });
      for (const name of names.sort()) if (re.test(name)) next.push(join(base, name));
    }
    bases = next;
  }
  return { paths: bases, problems };
}
