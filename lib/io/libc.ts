/**
 * The C library calls the runtimes do not offer, through Bun's FFI where it is there:
 * `waitpid` on one pid (PID 1 reaps the orphans handed to it), `poll` for a hang-up (the
 * client's leaving is seen while reading from it is paused, a socket's reader gone for
 * good), `send` that never waits (turnguard's stdout written from the main thread while the
 * socket has room), room in the kernel for a pipe or socket (`fcntl`, `setsockopt`) and
 * `pipe2` (the agent's output on pipes turnguard reads itself). Elsewhere (Deno from source,
 * a C library that does not load) `libc()` is null and callers do without.
 */

/** What turnguard asks of the C library. */
export interface Libc {
  /** `waitpid(pid, NULL, WNOHANG)`: reaps `pid` if it is a zombie child; its result. */
  reap(pid: number): number;
  /** Whether the peer of descriptor `fd` (a pipe's writers, a socket's peer) hung up. */
  hungUp(fd: number): boolean;
  /**
   * What the socket or pipe `fd` writes to can take now: "closed" when nothing ever again
   * (POLLHUP or POLLERR; a peer that only shut its own writing, POLLRDHUP, still reads),
   * "room" when some (POLLOUT), else "full".
   */
  writeRoom(fd: number): "closed" | "room" | "full";
  /**
   * `sendmsg(fd, parts, MSG_DONTWAIT | MSG_NOSIGNAL)`: what a socket takes of `parts` (at
   * most IOV_MAX of them) now, in one call, never waiting and never raising SIGPIPE; -1
   * when it takes nothing (full, or failed).
   */
  sendNow(fd: number, parts: readonly Uint8Array[]): number;
  /**
   * Gives the pipe or socket `fd` writes to room for at least `bytes` in the kernel
   * (`F_SETPIPE_SZ`, `SO_SNDBUF`) when it has less, as far as an unprivileged process may;
   * false when it could not. The room belongs to the pipe or socket, not to a descriptor:
   * nothing anyone else relies on changes but how much it holds.
   */
  widen(fd: number, kind: "fifo" | "socket", bytes: number): boolean;
  /** `pipe2(O_CLOEXEC)`: a new pipe's two descriptors, or null. */
  pipe(): { read: number; write: number } | null;
}

const WNOHANG = 1;
const POLLOUT = 0x4;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const POLLRDHUP = 0x2000;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;
const F_SETPIPE_SZ = 1031;
/** Linux's O_CLOEXEC: the agent gets only the ends it is handed as its stdio. */
const O_CLOEXEC = 0o2000000;
const F_GETPIPE_SZ = 1032;
const SOL_SOCKET = 1;
const SO_SNDBUF = 7;
/** The most pieces one writev(2) or sendmsg(2) takes (Linux's IOV_MAX). */
export const IOV_MAX = 1024;

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
  // The structures sendmsg is handed are laid out for a 64-bit little-endian ABI.
  if (process.platform !== "linux" || (process.arch !== "x64" && process.arch !== "arm64")) {
    return null;
  }
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
        sendmsg: { args: ["i32", "ptr", "i32"], returns: "i64" },
        fcntl: { args: ["i32", "i32", "i32"], returns: "i32" },
        pipe2: { args: ["ptr", "i32"], returns: "i32" },
        getsockopt: { args: ["i32", "i32", "i32", "ptr", "ptr"], returns: "i32" },
        setsockopt: { args: ["i32", "i32", "i32", "ptr", "u32"], returns: "i32" },
      });
      // struct pollfd { int fd; short events; short revents; }, little-endian.
      const pollfd = new Int32Array(2);
      const msghdr = new BigUint64Array(7);
      let iov = new BigUint64Array(2 * 16);
      /** `poll(fd, events)` now, without waiting: its revents (0 when none, or it failed). */
      const revents = (fd: number, events: number): number => {
        pollfd[0] = fd;
        pollfd[1] = events;
        return symbols.poll(ffi.ptr(pollfd), 1, 0) <= 0 ? 0 : (pollfd[1] >>> 16) & 0xffff;
      };
      return {
        reap: (pid) => symbols.waitpid(pid, null, WNOHANG),
        hungUp: (fd) => (revents(fd, POLLRDHUP) & (POLLHUP | POLLRDHUP | POLLERR)) !== 0,
        writeRoom: (fd) => {
          const got = revents(fd, POLLOUT);
          if ((got & (POLLHUP | POLLERR)) !== 0) return "closed";
          return (got & POLLOUT) !== 0 ? "room" : "full";
        },
        sendNow: (fd, parts) => {
          // struct iovec { void *base; size_t len; }[n] and struct msghdr { name, namelen,
          // iov, iovlen, control, controllen, flags } on a 64-bit little-endian ABI (musl's
          // 32-bit lengths with their padding read the same).
          const n = Math.min(parts.length, IOV_MAX);
          if (iov.length < 2 * n) iov = new BigUint64Array(2 * Math.max(n, iov.length));
          for (let i = 0; i < n; i++) {
            iov[2 * i] = BigInt(ffi.ptr(parts[i]) as number);
            iov[2 * i + 1] = BigInt(parts[i].length);
          }
          msghdr[2] = BigInt(ffi.ptr(iov) as number);
          msghdr[3] = BigInt(n);
          return Number(symbols.sendmsg(fd, ffi.ptr(msghdr), MSG_DONTWAIT | MSG_NOSIGNAL));
        },
        pipe: () => {
          const fds = new Int32Array(2);
          if (symbols.pipe2(ffi.ptr(fds), O_CLOEXEC) !== 0) return null;
          return { read: fds[0], write: fds[1] };
        },
        widen: (fd, kind, bytes) => {
          if (kind === "fifo") {
            if (symbols.fcntl(fd, F_GETPIPE_SZ, 0) >= bytes) return true;
            return symbols.fcntl(fd, F_SETPIPE_SZ, bytes) >= bytes;
          }
          const value = new Int32Array(1);
          const length = new Uint32Array([4]);
          if (
            symbols.getsockopt(fd, SOL_SOCKET, SO_SNDBUF, ffi.ptr(value), ffi.ptr(length)) !== 0
          ) {
            return false;
          }
          // The kernel doubles what it is given (its own bookkeeping) and reports that.
          if (value[0] >= bytes) return true;
          value[0] = bytes;
          return symbols.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, ffi.ptr(value), 4) === 0;
        },
      };
    } catch { /* not this one */ }
  }
  return null;
}
