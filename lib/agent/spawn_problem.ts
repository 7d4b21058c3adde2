/**
 * Why a command could not be started, and the exit code that says so, the way env, timeout
 * and nice say it: 127 when it is not found, 126 when it is found but cannot be executed (a
 * file without the execute bit found on PATH, a script whose `#!` interpreter is missing).
 * The runtime reports most of these as a bare ENOENT; the file system is asked what it was.
 */
import { accessSync, closeSync, constants, openSync, readSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { errorText, EXIT } from "../errors.ts";

/** What the file system says of a command that would not start. */
export type CommandLookup =
  | { kind: "missing" }
  | { kind: "not_executable"; path: string }
  | { kind: "bad_interpreter"; path: string; interpreter: string }
  | { kind: "found"; path: string };

/** Why the command could not be started, with its exit code. */
export interface SpawnProblem {
  exitCode: number;
  message: string;
}

/** The one-line problem and exit code for a failed start, from the lookup (pure). */
export function describeSpawnFailure(
  command: string,
  errCode: string | undefined,
  lookup: CommandLookup,
  detail: string,
): SpawnProblem {
  switch (lookup.kind) {
    case "missing":
      return { exitCode: EXIT.notFound, message: `${command}: command not found` };
    case "not_executable":
      return {
        exitCode: EXIT.notExecutable,
        message: `${command}: cannot execute: ${lookup.path} is not executable (permission denied)`,
      };
    case "bad_interpreter":
      return {
        exitCode: EXIT.notExecutable,
        message: `${command}: cannot execute: its interpreter ${lookup.interpreter} ` +
          `(named by #! in ${lookup.path}) was not found`,
      };
    case "found":
      return {
        exitCode: EXIT.notExecutable,
        message: errCode === "ENOENT"
          ? `${command}: cannot execute: ${lookup.path} exists but its loader or a library ` +
            `it needs was not found (ENOENT)`
          : `${command}: cannot execute (${errCode ?? detail})`,
      };
  }
}

/** Where `command` would be found: a path as given, else the first match on PATH. */
export function lookUpCommand(
  command: string,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
): CommandLookup {
  const candidates = command.includes("/")
    ? [resolve(cwd, command)]
    : (env.PATH ?? "").split(delimiter).map((dir) =>
      join(isAbsolute(dir) ? dir : resolve(cwd, dir || "."), command)
    );
  let unexecutable: string | null = null;
  for (const path of candidates) {
    if (!isFile(path)) continue;
    try {
      accessSync(path, constants.X_OK);
    } catch {
      unexecutable ??= path;
      continue;
    }
    const interpreter = shebangInterpreter(path);
    if (interpreter !== null && !isFile(interpreter)) {
      return { kind: "bad_interpreter", path, interpreter };
    }
    return { kind: "found", path };
  }
  return unexecutable !== null
    ? { kind: "not_executable", path: unexecutable }
    : { kind: "missing" };
}

/** The problem and exit code for a command that failed to start (reads the file system). */
export function commandProblem(
  command: string,
  err: unknown,
  env: Readonly<Record<string, string | undefined>>,
  cwd?: string,
): SpawnProblem {
  const code = (err as NodeJS.ErrnoException)?.code;
  return describeSpawnFailure(command, code, lookUpCommand(command, env, cwd), errorText(err));
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The interpreter a `#!` line names, or null when the file does not start with one. */
function shebangInterpreter(path: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const head = Buffer.alloc(256);
    const n = readSync(fd, head, 0, head.length, 0);
    const line = head.subarray(0, n).toString("latin1").split("\n")[0];
    if (!line.startsWith("#!")) return null;
    return line.slice(2).trim().split(/[ \t]/)[0] || null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
