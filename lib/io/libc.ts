/**
 * The two C library calls the runtimes do not offer, through Bun's FFI where it is there:
 * `waitpid` on one pid (PID 1 reaps the orphans handed to it) and `poll` for a hang-up
 * (the client's leaving is seen while reading from it is paused). Elsewhere (Deno from
 * source, a C library that does not load) `libc()` is null and callers do without.
 */

/** What turnguard asks of the C library. */
export interface Libc {
  /** `waitpid(pid, NULL, WNOHANG)`: reaps `pid` if it is a zombie child; its result. */
  reap(pid: number): number;
  /** Whether the peer of descriptor `fd` (a pipe's writers, a socket's peer) hung up. */
  hungUp(fd: number): boolean;
}

const WNOHANG = 1;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const POLLRDHUP = 0x2000;

/** Library names tried in order: glibc, then musl (Alpine). */
const NAMES = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1", "libc.so"];

interface BunFfi {
  dlopen(
    name: string,
    symbols: Record<string, { args: string[]; returns: string }>,
  ): { symbols: Record<string, (...args: unknown[]) => number> };
  ptr(view: ArrayBufferView): unknown;
}

let loaded: Promise<Libc | null> | null = null;

/** The C library's calls, or null where they cannot be reached. Loaded once. */
export function libc(): Promise<Libc | null> {
  return loaded ??= load();
}

async function load(): Promise<Libc | null> {
  if (process.platform !== "linux") return null;
  let ffi: BunFfi;
  try {
    // Named through a variable: Deno type-checks this file and has no such module.
    const name = "bun:ffi";
    ffi = await import(name) as BunFfi;
  } catch {
    return null;
  }
  for (const name of NAMES) {
    try {
      const { symbols } = ffi.dlopen(name, {
        waitpid: { args: ["i32", "ptr", "i32"], returns: "i32" },
        poll: { args: ["ptr", "u64", "i32"], returns: "i32" },
      });
      // struct pollfd { int fd; short events; short revents; }, little-endian.
      const pollfd = new Int32Array(2);
      return {
        reap: (pid) => symbols.waitpid(pid, null, WNOHANG),
        hungUp: (fd) => {
          pollfd[0] = fd;
          pollfd[1] = POLLRDHUP;
          if (symbols.poll(ffi.ptr(pollfd), 1, 0) <= 0) return false;
          return (((pollfd[1] >>> 16) & 0xffff) & (POLLHUP | POLLRDHUP | POLLERR)) !== 0;
        },
      };
    } catch { /* not this one */ }
  }
  return null;
}
