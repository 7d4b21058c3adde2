/**
 * A shell-like reader for command lines an agent ran or printed: quotes, escapes, `$'…'`,
 * pipelines (`|`, `|&`), lists (`&&`, `||`, `;`, `&`, newlines), redirections and
 * here-documents. It never runs or expands anything: `$VAR`, `$(…)` and backquotes stay as
 * written. Subshell parentheses only separate commands. Pure, and tolerant: unbalanced
 * quotes end at the end of the input instead of failing.
 */

/** A redirection of a simple command; `body` is a here-document's text. */
export interface Redirect {
  /** `<`, `>`, `>>`, `<<`, `<<-`, `<<<`, `>&`, `<&`, `&>`, `&>>`, `>|`, `<>`. */
  op: string;
  /** The file descriptor written before the operator (`2>`), or "". */
  fd: string;
  /** The word after the operator (a file, an fd, a here-document delimiter, a here-string). */
  target: string;
  body?: string;
}

/** One simple command: its words after quote removal, and its redirections. */
export interface SimpleCommand {
  argv: string[];
  redirects: Redirect[];
}

/** Simple commands joined by `|` or `|&`, in order. */
export type Pipeline = SimpleCommand[];

/** Characters that end an unquoted word. */
const METACHARS = new Set([" ", "\t", "\r", "\n", ";", "&", "|", "<", ">", "(", ")"]);

/** Redirection operators, longest first so the first match is the right one. */
const REDIRECT_OPS = ["&>>", "<<<", "<<-", "&>", ">>", "<<", "<&", ">&", ">|", "<>", "<", ">"];

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  n: "\n",
  t: "\t",
  r: "\r",
  a: "\x07",
  b: "\b",
  f: "\f",
  v: "\v",
  e: "\x1b",
  E: "\x1b",
  "\\": "\\",
  "'": "'",
  '"': '"',
  "?": "?",
};

/** Decodes the backslash escapes of `$'…'`, `echo -e` and printf formats. */
export function backslashEscapes(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== "\\" || i + 1 >= text.length) {
      out += c;
      continue;
    }
    const e = text[++i];
    if (Object.hasOwn(SIMPLE_ESCAPES, e)) {
      out += SIMPLE_ESCAPES[e];
    } else if (e === "x" && /^[0-9A-Fa-f]/.test(text[i + 1] ?? "")) {
      const hex = /^[0-9A-Fa-f]{1,2}/.exec(text.slice(i + 1))![0];
      out += String.fromCharCode(parseInt(hex, 16));
      i += hex.length;
    } else if (/[0-7]/.test(e)) {
      const oct = /^[0-7]{1,3}/.exec(text.slice(e === "0" ? i + 1 : i))?.[0] ?? "";
      out += String.fromCharCode(parseInt(oct || "0", 8));
      i += e === "0" ? oct.length : oct.length - 1;
    } else {
      out += "\\" + e;
    }
  }
  return out;
}

/** Splits a command line (or a whole script) into pipelines of simple commands. */
export function parseShell(src: string): Pipeline[] {
  const n = src.length;
  let i = 0;
  const pipelines: Pipeline[] = [];
  let pipeline: Pipeline = [];
  let cmd: SimpleCommand = { argv: [], redirects: [] };
  let heredocs: { redirect: Redirect; stripTabs: boolean }[] = [];

  const endCommand = () => {
    if (cmd.argv.length > 0 || cmd.redirects.length > 0) pipeline.push(cmd);
    cmd = { argv: [], redirects: [] };
  };
  const endPipeline = () => {
    endCommand();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };

  /** `$(…)`, `${…}` or `(…)` kept verbatim, quotes inside respected. */
  const readBalanced = (): string => {
    const start = i;
    const open = src[i] === "$" ? src[i + 1] : src[i];
    const close = open === "{" ? "}" : ")";
    i += src[i] === "$" ? 2 : 1;
    let depth = 1;
    while (i < n && depth > 0) {
      const c = src[i];
      if (c === "\\") i += 2;
      else if (c === "'") {
        const end = src.indexOf("'", i + 1);
        i = end === -1 ? n : end + 1;
      } else if (c === '"') {
        i++;
        while (i < n && src[i] !== '"') i += src[i] === "\\" ? 2 : 1;
        i++;
      } else {
        if (c === open) depth++;
        else if (c === close) depth--;
        i++;
      }
    }
    return src.slice(start, Math.min(i, n));
  };

  /** A backquoted command substitution, kept verbatim. */
  const readBackquote = (): string => {
    const start = i++;
    while (i < n && src[i] !== "`") i += src[i] === "\\" ? 2 : 1;
    i = Math.min(i + 1, n);
    return src.slice(start, i);
  };

  /** One word with its quotes removed; `quoted` tells whether any quoting was used. */
  const readWord = (): { text: string; quoted: boolean } => {
    let text = "";
    let quoted = false;
    while (i < n && !METACHARS.has(src[i])) {
      const c = src[i];
      if (c === "\\") {
        if (src[i + 1] === "\n") i += 2;
        else if (i + 1 < n) text += src[i + 1], i += 2, quoted = true;
        else i++;
      } else if (c === "'") {
        quoted = true;
        const end = src.indexOf("'", i + 1);
        text += src.slice(i + 1, end === -1 ? n : end);
        i = end === -1 ? n : end + 1;
      } else if (c === "$" && src[i + 1] === "'") {
        quoted = true;
        let j = i + 2;
        while (j < n && src[j] !== "'") j += src[j] === "\\" ? 2 : 1;
        text += backslashEscapes(src.slice(i + 2, Math.min(j, n)));
        i = Math.min(j + 1, n);
      } else if (c === '"') {
        quoted = true;
        i++;
        while (i < n && src[i] !== '"') {
          const d = src[i];
          if (d === "\\" && i + 1 < n && '"\\$`\n'.includes(src[i + 1])) {
            if (src[i + 1] !== "\n") text += src[i + 1];
            i += 2;
          } else if (d === "$" && (src[i + 1] === "(" || src[i + 1] === "{")) {
            text += readBalanced();
          } else if (d === "`") {
            text += readBackquote();
          } else {
            text += d;
            i++;
          }
        }
        i++;
      } else if (c === "$" && (src[i + 1] === "(" || src[i + 1] === "{")) {
        text += readBalanced();
      } else if (c === "`") {
        text += readBackquote();
      } else {
        text += c;
        i++;
      }
    }
    return { text, quoted };
  };

  const readRedirect = (fd: string) => {
    const op = REDIRECT_OPS.find((o) => src.startsWith(o, i))!;
    i += op.length;
    while (src[i] === " " || src[i] === "\t") i++;
    const target = i < n && !METACHARS.has(src[i]) ? readWord().text : "";
    const redirect: Redirect = { op, fd, target };
    cmd.redirects.push(redirect);
    if (op === "<<" || op === "<<-") heredocs.push({ redirect, stripTabs: op === "<<-" });
  };

  /** Reads the bodies of the here-documents opened on the line that just ended. */
  const readHeredocs = () => {
    for (const { redirect, stripTabs } of heredocs) {
      const lines: string[] = [];
      let closed = false;
      while (i < n) {
        const nl = src.indexOf("\n", i);
        const raw = src.slice(i, nl === -1 ? n : nl);
        i = nl === -1 ? n : nl + 1;
        const line = stripTabs ? raw.replace(/^\t+/, "") : raw;
        if (line.replace(/\r$/, "") === redirect.target) {
          closed = true;
          break;
        }
        lines.push(line);
      }
      redirect.body = lines.length > 0 || closed ? lines.join("\n") + "\n" : "";
    }
    heredocs = [];
  };

  while (i < n) {
    const c = src[i];
    if (c === " " || c === "\t" || c === "\r") {
      i++;
    } else if (c === "\\" && src[i + 1] === "\n") {
      i += 2;
    } else if (c === "\n") {
      i++;
      endPipeline();
      readHeredocs();
    } else if (c === "#") {
      while (i < n && src[i] !== "\n") i++;
    } else if (c === ";") {
      i += src[i + 1] === ";" ? 2 : 1;
      endPipeline();
    } else if (c === "&" && src[i + 1] === ">") {
      readRedirect("");
    } else if (c === "&") {
      i += src[i + 1] === "&" ? 2 : 1;
      endPipeline();
    } else if (c === "|") {
      if (src[i + 1] === "|") {
        i += 2;
        endPipeline();
      } else {
        i += src[i + 1] === "&" ? 2 : 1;
        endCommand();
      }
    } else if (c === "(" || c === ")") {
      i++;
      endPipeline();
    } else if (c === "<" || c === ">") {
      readRedirect("");
    } else {
      const start = i;
      const word = readWord();
      const raw = src.slice(start, i);
      if (/^\d+$/.test(raw) && (src[i] === "<" || src[i] === ">")) readRedirect(raw);
      else cmd.argv.push(word.text);
    }
  }
  endPipeline();
  if (heredocs.length > 0) readHeredocs();
  return pipelines;
}

/** The last path segment of a program name (`/usr/bin/env` → `env`). */
export function programName(word: string): string {
  return word.slice(word.lastIndexOf("/") + 1);
}

/** Reserved words and `!` that may stand before a command without being it. */
const RESERVED = new Set(["!", "{", "}", "if", "then", "elif", "else", "do", "while", "until"]);

/** Wrappers that run the rest of their arguments as the command: `env`, `nohup`, `timeout`… */
const WRAPPERS = new Set(["command", "exec", "builtin", "nohup", "env", "time", "sudo", "timeout"]);

/**
 * The words of a simple command that name what actually runs: leading reserved words,
 * `NAME=value` assignments and transparent wrappers (`env`, `command`, `exec`, `nohup`,
 * `time`, `sudo`, `timeout N`) removed. `command -v X` runs nothing and yields [].
 */
export function effectiveArgv(argv: readonly string[]): string[] {
  let i = 0;
  for (;;) {
    while (i < argv.length && (RESERVED.has(argv[i]) || /^[A-Za-z_]\w*\+?=/.test(argv[i]))) i++;
    const word = argv[i] === undefined ? undefined : programName(argv[i]);
    if (word === undefined || !WRAPPERS.has(word)) break;
    i++;
    if (word === "command" && /^-[vV]/.test(argv[i] ?? "")) return [];
    while (i < argv.length && argv[i].startsWith("-") && argv[i].length > 1) {
      const opt = argv[i++];
      if (opt === "--") break;
      const takesValue = (word === "env" && (opt === "-u" || opt === "-C")) ||
        (word === "sudo" && ["-u", "-g", "-C", "-D", "-h", "-p", "-R", "-T"].includes(opt)) ||
        (word === "timeout" && (opt === "-s" || opt === "-k"));
      if (takesValue) i++;
    }
    if (word === "timeout") i++;
  }
  return argv.slice(i);
}
