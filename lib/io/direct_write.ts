/**
 * Writing to one of turnguard's standard streams from the main thread without ever waiting:
 * a write that waits in write(2) holds the relay, its timers and the SIGTERM handler, and a
 * write handed to the runtime's thread pool costs the relay a hop between cores for every
 * batch (the proxy spent about 1.6× the CPU of a main-thread write on the same bytes,
 * docs/BENCHMARKS.md), and a write waiting there holds a thread of the pool, which the
 * runtime needs for its own work (it closes a child's stdin there). So what the stream can
 * take now is written here, and the rest is tried again once the stream may take more
 * (lib/io/stdio.ts); only a descriptor with no direct writer is written on the pool.
 *
 * How "now" is asked depends on what the descriptor is, and never changes a flag anyone
 * else shares (the descriptor's open file description is the caller's too):
 * - a pipe (FIFO) or a terminal: opened a second time through /proc/self/fd, non-blocking
 *   on that new description only (a terminal whose output is suspended, Ctrl-S, takes
 *   nothing until it resumes);
 * - a socket (what Node and Bun hand a child for "pipe"): `send` with MSG_DONTWAIT;
 * - a regular file or a device other than a terminal: written as it is (it does not wait
 *   on a reader);
 * - anything else (or where /proc does not reopen it): nothing here (the pool writes it all).
 */
import { closeSync, constants, fstatSync, openSync, writevSync } from "node:fs";
import { isatty } from "node:tty";
import { IOV_MAX, type Libc } from "./libc.ts";

/**
 * Writes as much of `parts`, in order, as the stream takes at once; returns the bytes
 * written, 0 when it takes nothing now, or BROKEN when it never will (its reader is gone,
 * or the write failed).
 */
export type DirectWrite = (parts: readonly Uint8Array[]) => number;

/** What a DirectWrite returns once its stream is broken. */
export const BROKEN = -1;

/** Linux's O_CLOEXEC (not in every runtime's `constants`): the agent never inherits it. */
const O_CLOEXEC = 0o2000000;

/** What a descriptor is, as far as writing to it without waiting goes. */
export type DescriptorKind = "fifo" | "socket" | "tty" | "file" | "other";

/** The kind of descriptor `fd`; "other" when it cannot be looked at. */
export function descriptorKind(fd: number): DescriptorKind {
  try {
    const st = fstatSync(fd);
    if (st.isFIFO()) return "fifo";
    if (st.isSocket()) return "socket";
    if (st.isFile()) return "file";
    if (st.isCharacterDevice()) return isatty(fd) ? "tty" : "file";
  } catch { /* closed, or not ours to look at */ }
  return "other";
}

/**
 * The direct writer for descriptor `fd`, or null when it has none (a socket without the C
 * library, a pipe or terminal /proc does not reopen). `c` is the C library (for sockets).
 */
export function directWriter(fd: number, kind: DescriptorKind, c: Libc | null): DirectWrite | null {
  switch (kind) {
    case "fifo":
    case "tty": {
      const own = reopenNonBlocking(fd, kind);
      return own === null ? null : (parts) => writeNow(own, parts);
    }
    case "socket":
      return c === null ? null : (parts) => sendAll(c, fd, parts);
    case "file":
      return (parts) => writeNow(fd, parts);
    default:
      return null;
  }
}

/**
 * A second descriptor of the pipe or terminal `fd` writes to, non-blocking (O_NONBLOCK on
 * this new open file description only; a terminal is opened O_NOCTTY, so it never becomes
 * turnguard's controlling terminal), or null (no /proc, no reader left, not what it was).
 */
function reopenNonBlocking(fd: number, kind: "fifo" | "tty"): number | null {
  let own: number;
  try {
    own = openSync(
      `/proc/self/fd/${fd}`,
      constants.O_WRONLY | constants.O_NONBLOCK | O_CLOEXEC | constants.O_NOCTTY,
    );
  } catch {
    return null;
  }
  try {
    const [mine, theirs] = [fstatSync(own), fstatSync(fd)];
    const same = kind === "fifo"
      ? mine.isFIFO() && mine.ino === theirs.ino
      : mine.isCharacterDevice() && mine.rdev === theirs.rdev;
    if (same) return own;
  } catch { /* fall through */ }
  closeSync(own);
  return null;
}

/** writev(2) on `fd`; 0 when it would wait (EAGAIN), BROKEN when it failed. */
function writeNow(fd: number, parts: readonly Uint8Array[]): number {
  try {
    return writevSync(fd, parts.length > IOV_MAX ? parts.slice(0, IOV_MAX) : [...parts]);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "EAGAIN" || code === "EWOULDBLOCK" || code === "EINTR" ? 0 : BROKEN;
  }
}

/**
 * One `sendmsg` of the parts (one wake-up of the reader, not one per part); 0 when the
 * socket is full, BROKEN when its peer hung up or the send fails for another reason. The
 * call does not say which errno it met, so the socket's state does: closed is broken, full
 * is 0, and with room the send is tried once more (the reader may have made room in
 * between) — failing with room, it failed for good (a peer that shut its reading: EPIPE
 * while the socket still polls writable).
 */
function sendAll(c: Libc, fd: number, parts: readonly Uint8Array[]): number {
  const n = c.sendNow(fd, parts);
  if (n >= 0) return n;
  const room = c.writeRoom(fd);
  if (room !== "room") return room === "closed" ? BROKEN : 0;
  const again = c.sendNow(fd, parts);
  return again >= 0 ? again : BROKEN;
}
