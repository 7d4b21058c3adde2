/**
 * The fallback publish: runs the profile's command once, as an argv array (never through a
 * shell), with the reply on stdin, within a time bound. Its stdout is discarded — in proxy
 * mode turnguard's own stdout is the client's JSON-RPC stream. It never throws: a command
 * that is missing, fails or hangs becomes a result with `sent: false`, never a retry.
 */
import { spawn } from "node:child_process";
import { Tail } from "../text/byte_window.ts";

/** Bytes of the command's stderr kept for the outcome. */
export const FALLBACK_STDERR_BYTES = 2048;

/** Grace between SIGTERM and SIGKILL when the command overruns its time. */
export const KILL_GRACE_MS = 1000;

/** How to run the fallback. */
export interface FallbackSpec {
  /** The filled argv: program first. */
  argv: readonly string[];
  /** Text written to the command's stdin (then closed); null: stdin is /dev/null. */
  stdin: string | null;
  timeoutMs: number;
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
}

/** What became of the fallback. `sent` only when it exited 0 within its time. */
export interface FallbackResult {
  sent: boolean;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** The tail of its stderr (or why it could not run), trimmed. */
  stderr: string;
}

/** Runs a fallback command; the seam tests and the engine share. */
export type FallbackRunner = (spec: FallbackSpec) => Promise<FallbackResult>;

function failure(stderr: string): FallbackResult {
  return { sent: false, exitCode: null, signal: null, timedOut: false, stderr };
}

/** Runs the fallback command and reports what happened; never throws, never retries. */
export const runFallback: FallbackRunner = (spec) => {
  if (spec.argv.length === 0 || spec.argv[0] === "") {
    return Promise.resolve(failure("fallback command is empty"));
  }
  return new Promise<FallbackResult>((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(spec.argv[0], spec.argv.slice(1), {
        shell: false,
        stdio: [spec.stdin === null ? "ignore" : "pipe", "ignore", "pipe"],
        env: spec.env as NodeJS.ProcessEnv | undefined,
        cwd: spec.cwd,
        detached: true,
      });
    } catch (err) {
      resolve(failure(`cannot run ${spec.argv[0]}: ${(err as Error).message}`));
      return;
    }
    const stderr = new Tail(FALLBACK_STDERR_BYTES);
    child.stderr?.on("data", (chunk: Uint8Array) => stderr.push(chunk));
    let timedOut = false;
    let exited: { code: number | null; signal: string | null } | null = null;
    const timers: ReturnType<typeof setTimeout>[] = [];
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
    };
    timers.push(setTimeout(() => {
      if (exited !== null) return finish();
      timedOut = true;
      killGroup("SIGTERM");
      timers.push(setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS));
      // Bounded even if the pipes never close: give up waiting after a second grace.
      timers.push(setTimeout(() => finish(), 2 * KILL_GRACE_MS));
    }, spec.timeoutMs));
    let spawnError: Error | null = null;
    child.once("error", (err) => {
      spawnError = err;
      if (child.pid === undefined) finish();
    });
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      timers.forEach(clearTimeout);
      if (spawnError && child.pid === undefined) {
        const code = (spawnError as NodeJS.ErrnoException).code;
        resolve(failure(
          code === "ENOENT"
            ? `${spec.argv[0]}: command not found`
            : `cannot run ${spec.argv[0]}: ${code ?? spawnError.message}`,
        ));
        return;
      }
      const code = exited?.code ?? null;
      const signal = exited?.signal ?? (timedOut ? "SIGKILL" : null);
      let text = stderr.text().trim();
      if (timedOut) text = `${text}${text ? "\n" : ""}timed out after ${spec.timeoutMs}ms`;
      resolve({ sent: !timedOut && code === 0, exitCode: code, signal, timedOut, stderr: text });
    };
    child.once("exit", (code, signal) => {
      exited = { code, signal };
      // A background child may hold stderr open: do not wait for it past a short grace.
      timers.push(setTimeout(() => {
        child.stderr?.destroy();
        finish();
      }, KILL_GRACE_MS));
    });
    child.once("close", (code, signal) => {
      exited ??= { code, signal };
      finish();
    });
    if (spec.stdin !== null && child.stdin) {
      child.stdin.on("error", () => {}); // a command that does not read its stdin is fine
      child.stdin.end(spec.stdin);
    }
  });
};
