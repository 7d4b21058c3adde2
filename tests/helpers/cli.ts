/** Runs turnguard as a real child process (source via bun, or the compiled binary). */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "..", "..");
export const BUN = join(ROOT, "node_modules", ".bin", "bun");
export const DENO = join(ROOT, "node_modules", ".bin", "deno");
export const MAIN = join(ROOT, "main.ts");
export const FAKE_AGY = join(ROOT, "examples", "agents", "agy");

/** What a finished process left behind. */
export interface Finished {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Options for one turnguard invocation. */
export interface CliOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  runtime?: "bun" | "deno";
  /** Called once the process is spawned (to send signals, write stdin...). */
  onSpawn?: (child: ReturnType<typeof spawn>) => void;
}

/** Runs `turnguard ARGS` from source and collects its output. */
export function turnguard(args: string[], opts: CliOptions = {}): Promise<Finished> {
  const argv = opts.runtime === "deno" ? [DENO, "run", "-A", MAIN, ...args] : [BUN, MAIN, ...args];
  return runProcess(argv, opts);
}

/** Runs any argv and collects its output. */
export function runProcess(argv: string[], opts: CliOptions = {}): Promise<Finished> {
  return new Promise((done, fail) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, ...opts.env } as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (c) => (stdout += c));
    child.stderr!.on("data", (c) => (stderr += c));
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
    opts.onSpawn?.(child);
  });
}

/**
 * An environment that keeps turnguard inside `home`: its config, state and journal, and
 * no TURNGUARD_* setting of the machine running the tests.
 */
export function homeEnv(
  home: string,
  extra: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_STATE_HOME: join(home, ".state"),
    TURNGUARD_CONFIG: undefined,
    TURNGUARD_JOURNAL: undefined,
    ...extra,
  };
}
