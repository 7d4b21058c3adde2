/**
 * The part of Bun's own API that turnguard's Bun-native fast paths use, typed here: Deno
 * checks and runs the same sources without Bun's type definitions, and `bun` is undefined
 * there, which is how a fast path knows to step aside.
 */

/** What `Bun.spawn` returns (the fields turnguard reads). */
export interface BunSubprocess {
  readonly pid: number;
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  readonly exited: Promise<number>;
  readonly stdin: BunFileSink;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  kill(signal?: string | number): void;
  resourceUsage(): {
    maxRSS: number;
    cpuTime: { user: number | bigint; system: number | bigint };
  } | undefined;
}

/** A Bun `FileSink` (a subprocess's piped stdin). */
export interface BunFileSink {
  write(data: string | Uint8Array): number;
  flush(): number | Promise<number>;
  end(): number | Promise<number>;
}

/** How a stream of a spawned process is wired. */
export type BunStdio = "inherit" | "pipe" | "ignore" | number;

/** `Bun.spawn`'s options (the ones turnguard sets). */
export interface BunSpawnOptions {
  stdin?: BunStdio;
  stdout?: BunStdio;
  stderr?: BunStdio;
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** A new session and process group for the child (setsid). */
  detached?: boolean;
}

/** The `Bun` global, as far as turnguard uses it. */
export interface BunApi {
  readonly version: string;
  /** Runtime knobs; `setJITPolicy` is absent from older Bun versions. */
  readonly unsafe?: {
    /** Scales the JIT's tier-up thresholds (1: normal); see the Makefile's build flags. */
    setJITPolicy?(scale: number): void;
  };
  spawn(command: string[], options: BunSpawnOptions): BunSubprocess;
  write(destination: unknown, data: string | Uint8Array): Promise<number>;
  readonly stdin: { stream(): ReadableStream<Uint8Array> };
  /** A file or descriptor as Bun reads it (`stream()`: its bytes, read as they come). */
  file(path: string | number): { stream(): ReadableStream<Uint8Array> };
  readonly stdout: unknown;
  readonly stderr: unknown;
}

/** Bun's API when running under Bun; undefined elsewhere (Deno). */
export const bun: BunApi | undefined = (globalThis as { Bun?: BunApi }).Bun;
