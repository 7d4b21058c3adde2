/**
 * Path templates of a profile's `logs` and `session_records`: environment variables
 * (`$VAR`, `${VAR}`, `${VAR:-default}` with defaults that nest, `~`), the agent's working
 * directory (`{cwd}`, and the forms agents munge it into when they name a folder after it)
 * and, in `session_records`, the session id (`{session}`, `{session:N}`).
 *
 * Agents name their per-project folders after the working directory, each its own way:
 * - `{cwd:alnum}`: every character but ASCII letters and digits becomes `-` (Claude Code's
 *   `~/.claude/projects/-home-me-my-app/`);
 * - `{cwd:pi}`: `--` + the path without its leading separator, `/`, `\` and `:` as `-` + `--`
 *   (pi's `~/.pi/agent/sessions/--home-me-my-app--/`, pi-coding-agent's session manager);
 * - `{cwd:dash}`: every `/` becomes `-`;
 * - `{cwd:sha256}`: the hex SHA-256 of the path (gemini-cli's project hash,
 *   `~/.gemini/tmp/<hash>/`);
 * - `{cwd}`: the path as it is.
 *
 * Pure: the environment, the working directory and the session id are arguments.
 */

/** The named forms `{cwd:FORM}` takes. */
export const CWD_FORMS = ["alnum", "pi", "dash", "sha256"] as const;
/** One of them. */
export type CwdForm = typeof CWD_FORMS[number];

/** What a template is expanded with. */
export interface TemplateContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The home directory `~` and an unset `$HOME` stand for (lib/io/env_dirs.ts homeDir). */
  readonly home?: string | null;
  /** The agent's working directory; absent: a template naming `{cwd}` cannot be expanded. */
  readonly cwd?: string;
  /** The session id; absent: a template naming `{session}` cannot be expanded. */
  readonly session?: string;
  /** A SHA-256 hex digest of a text (node:crypto at the edge; injected to stay pure). */
  readonly sha256?: (text: string) => string;
}

/** A template expanded, or why it could not be. */
export type Expansion = { path: string; problem: null } | { path: null; problem: string };

/** One piece of a parsed template. */
type Piece =
  | { kind: "text"; text: string }
  | { kind: "var"; name: string; fallback: Piece[] | null }
  | { kind: "cwd"; form: CwdForm | null }
  | { kind: "session"; length: number | null };

/** A template that does not parse: what is wrong, at which character. */
export class TemplateSyntaxError extends Error {
  constructor(message: string, readonly index: number) {
    super(message);
  }
}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const PLACEHOLDER = /\{(cwd|session)(?::([A-Za-z0-9]+))?\}/y;

/** Parses a template; throws TemplateSyntaxError on an unclosed `${`, a bad placeholder. */
export function parseTemplate(template: string): Piece[] {
  return parseFrom(template, 0, false)[0];
}

/** Pieces from `start` up to the end, or up to the `}` closing a default when `nested`. */
function parseFrom(t: string, start: number, nested: boolean): [Piece[], number] {
  const pieces: Piece[] = [];
  let text = "";
  let i = start;
  const flush = () => {
    if (text !== "") pieces.push({ kind: "text", text });
    text = "";
  };
  while (i < t.length) {
    const c = t[i];
    if (c === "}" && nested) break;
    if (c === "$") {
      flush();
      i = parseVar(t, i, pieces);
      continue;
    }
    if (c === "{") {
      PLACEHOLDER.lastIndex = i;
      const m = PLACEHOLDER.exec(t);
      if (m === null) {
        throw new TemplateSyntaxError(
          "unknown placeholder (known: {cwd}, {cwd:FORM}, {session}, {session:N})",
          i,
        );
      }
      flush();
      pieces.push(placeholder(m[1], m[2], i));
      i += m[0].length;
      continue;
    }
    text += c;
    i++;
  }
  if (nested && i >= t.length) throw new TemplateSyntaxError("`${` is never closed", start);
  flush();
  return [pieces, i];
}

/** One `{cwd…}` or `{session…}` placeholder. */
function placeholder(name: string, arg: string | undefined, at: number): Piece {
  if (name === "session") {
    if (arg === undefined) return { kind: "session", length: null };
    if (!/^[1-9][0-9]*$/.test(arg)) {
      throw new TemplateSyntaxError(`{session:${arg}}: N must be a positive whole number`, at);
    }
    return { kind: "session", length: Number(arg) };
  }
  if (arg === undefined) return { kind: "cwd", form: null };
  if (!(CWD_FORMS as readonly string[]).includes(arg)) {
    throw new TemplateSyntaxError(
      `{cwd:${arg}}: unknown form (known: ${CWD_FORMS.join(", ")})`,
      at,
    );
  }
  return { kind: "cwd", form: arg as CwdForm };
}

/** `$NAME`, `${NAME}` or `${NAME:-default}` at `i`; a lone `$` is text. */
function parseVar(t: string, i: number, pieces: Piece[]): number {
  const braced = t[i + 1] === "{";
  NAME.lastIndex = i + (braced ? 2 : 1);
  const m = NAME.exec(t);
  if (m === null) {
    if (braced) throw new TemplateSyntaxError("`${` must be followed by a variable name", i);
    pieces.push({ kind: "text", text: "$" });
    return i + 1;
  }
  let j = NAME.lastIndex;
  if (!braced) {
    pieces.push({ kind: "var", name: m[0], fallback: null });
    return j;
  }
  let fallback: Piece[] | null = null;
  if (t.startsWith(":-", j)) [fallback, j] = parseFrom(t, j + 2, true);
  if (t[j] !== "}") throw new TemplateSyntaxError("`${` is never closed", i);
  pieces.push({ kind: "var", name: m[0], fallback });
  return j + 1;
}

/**
 * What a template may need: the variables it names without a default (in a default too),
 * whether it names `{cwd}` and `{session}`.
 */
export function templateNeeds(
  template: string,
): { vars: string[]; cwd: boolean; session: boolean } {
  const need = { vars: [] as string[], cwd: false, session: false };
  const walk = (pieces: Piece[]) => {
    for (const p of pieces) {
      if (p.kind === "var") {
        if (p.fallback === null) need.vars.push(p.name);
        else walk(p.fallback);
      } else if (p.kind === "cwd") need.cwd = true;
      else if (p.kind === "session") need.session = true;
    }
  };
  walk(parseTemplate(template));
  return need;
}

/**
 * A template expanded in `ctx`. A variable that is unset (or empty) takes its default;
 * without one it is a problem, never silently "" (that would read `/logs/*` for
 * `$MY_DIR/logs/*`). `HOME` unset falls back to `ctx.home`.
 */
export function expandTemplate(template: string, ctx: TemplateContext): Expansion {
  let pieces: Piece[];
  try {
    pieces = parseTemplate(template);
  } catch (err) {
    return { path: null, problem: `${template}: ${(err as Error).message}` };
  }
  const withHome = template.startsWith("~/") || template === "~"
    ? [{ kind: "var", name: "HOME", fallback: null } as Piece, ...dropTilde(pieces)]
    : pieces;
  try {
    return { path: render(withHome, ctx), problem: null };
  } catch (err) {
    if (err instanceof Unexpandable) return { path: null, problem: `${template}: ${err.message}` };
    throw err;
  }
}

/** The pieces without the leading `~` of their first text. */
function dropTilde(pieces: Piece[]): Piece[] {
  const [first, ...rest] = pieces;
  if (first?.kind !== "text") return pieces;
  const text = first.text.slice(1);
  return text === "" ? rest : [{ kind: "text", text }, ...rest];
}

/** A template naming something its context does not have. */
class Unexpandable extends Error {}

function render(pieces: Piece[], ctx: TemplateContext): string {
  let out = "";
  for (const p of pieces) {
    if (p.kind === "text") out += p.text;
    else if (p.kind === "var") out += variable(p.name, p.fallback, ctx);
    else if (p.kind === "cwd") out += cwdForm(p.form, ctx);
    else {
      if (ctx.session === undefined) throw new Unexpandable("{session} is not known here");
      out += p.length === null ? ctx.session : ctx.session.slice(0, p.length);
    }
  }
  return out;
}

function variable(name: string, fallback: Piece[] | null, ctx: TemplateContext): string {
  const value = ctx.env[name];
  if (value) return value;
  if (fallback !== null) return render(fallback, ctx);
  if (name === "HOME" && ctx.home) return ctx.home;
  throw new Unexpandable(`$${name} is not set and has no default (\${${name}:-…})`);
}

/** The working directory in one of the forms agents name folders with. */
export function cwdForm(
  form: CwdForm | null,
  ctx: Pick<TemplateContext, "cwd" | "sha256">,
): string {
  const cwd = ctx.cwd;
  if (cwd === undefined) throw new Unexpandable("{cwd} is not known here");
  switch (form) {
    case null:
      return cwd;
    case "alnum":
      return cwd.replace(/[^A-Za-z0-9]/g, "-");
    case "pi":
      return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
    case "dash":
      return cwd.replace(/\//g, "-");
    case "sha256":
      if (ctx.sha256 === undefined) throw new Unexpandable("{cwd:sha256} needs a hash function");
      return ctx.sha256(cwd);
  }
}
