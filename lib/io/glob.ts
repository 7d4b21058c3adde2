/**
 * Log path patterns: `$HOME/.gemini/antigravity-cli/log/cli-*.log`. Templates are expanded
 * from the given environment (so tests can point HOME anywhere) and working directory, and
 * `*`, `?` match within one path segment.
 */
import { opendirSync } from "node:fs";
import { join } from "node:path";
import { errCode } from "./bounded_read.ts";
import { homeDir } from "./env_dirs.ts";
import { expandTemplate, type TemplateContext } from "./path_template.ts";

/**
 * A profile's path templates expanded for one turn (lib/io/path_template.ts): the ones that
 * expand, and one problem line per template that does not (an unset variable with no
 * default, a `{session}` not known here) — such a template is skipped, never read as if
 * the variable were "" (`$MY_DIR/logs/*` would become `/logs/*`).
 */
export function expandPatterns(
  templates: readonly string[],
  ctx: Omit<TemplateContext, "home" | "sha256">,
): { patterns: string[]; problems: string[] } {
  const patterns: string[] = [];
  const problems: string[] = [];
  const full: TemplateContext = { ...ctx, home: homeDir(ctx.env), sha256: sha256Hex };
  for (const t of templates) {
    const { path, problem } = expandTemplate(t, full);
    if (path !== null) patterns.push(path);
    else problems.push(`path pattern ${problem}; not read`);
  }
  return { patterns, problems };
}

/** The hex SHA-256 of a text (node:crypto only when a template asks for it). */
function sha256Hex(text: string): string {
  return process.getBuiltinModule("node:crypto").createHash("sha256").update(text).digest("hex");
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
