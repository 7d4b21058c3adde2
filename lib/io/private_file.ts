/**
 * Opening the files turnguard writes for its owner (the journal, `--outcome-file`):
 * created 0600 in directories created 0700, never through a symbolic link planted at the
 * path, never blocking on a FIFO or device, and only ever a regular file. Also the
 * non-blocking open the journal's readers use, so `wait` and `log` cannot hang on a FIFO,
 * and the close of descriptors that may be closed already.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  type Stats,
} from "node:fs";
import { dirname } from "node:path";
import { errCode } from "./logfs.ts";

/** Mode of the files turnguard creates. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of the directories turnguard creates for them. */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * A path turnguard will not write or read: what it is instead of a regular file (or, for a
 * file it writes, whose it is instead of this user's).
 */
export class NotRegularFileError extends Error {
  constructor(readonly path: string, readonly what: string, why = "not a regular file") {
    super(`${path} is ${what}, ${why}`);
    this.name = "NotRegularFileError";
  }
}

/**
 * The owner of an existing file turnguard would append its records to, when that is
 * another user: a journal planted in a shared directory (`/tmp`) by someone else would let
 * them read every turn and forge records. Null when it is this user's (or uids are unknown).
 */
export function foreignOwner(st: Stats): string | null {
  const uid = process.getuid?.();
  return uid === undefined || st.uid === uid ? null : `owned by uid ${st.uid}`;
}

/** The error for a file another user owns (see foreignOwner). */
function notOwnError(path: string, owner: string): NotRegularFileError {
  return new NotRegularFileError(path, owner, "not by this user");
}

/** What a non-regular file is, in words. */
export function fileKind(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSymbolicLink()) return "a symbolic link (not followed)";
  return "not a regular file";
}

/**
 * What is at `path` when opening it failed with an error that means "not a file turnguard
 * uses" (a symlink under O_NOFOLLOW, a FIFO without a reader, a directory); else null.
 */
function openProblem(path: string, err: unknown): string | null {
  if (!["ELOOP", "ENXIO", "EISDIR"].includes(errCode(err))) return null;
  try {
    return fileKind(lstatSync(path));
  } catch {
    return "not a regular file";
  }
}

/**
 * Returns `fd` when it is a regular file (and, when `ownOnly`, this user's); otherwise
 * closes it and throws.
 */
function regularOnly(fd: number, path: string, ownOnly = false): number {
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (!st.isFile()) {
    closeSync(fd);
    throw new NotRegularFileError(path, fileKind(st));
  }
  const owner = ownOnly ? foreignOwner(st) : null;
  if (owner) {
    closeSync(fd);
    throw notOwnError(path, owner);
  }
  return fd;
}

/**
 * Opens `path` for appending, creating it 0600 (and its directory 0700 when `makeDir`).
 * Throws NotRegularFileError for a symlink, FIFO, directory, socket or device at the path,
 * or a file another user owns, and the file system's error otherwise; never blocks.
 */
export function openPrivateAppend(path: string, makeDir = false): number {
  if (makeDir) mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT |
    constants.O_NONBLOCK | constants.O_NOFOLLOW;
  let fd: number;
  try {
    fd = openSync(path, flags, PRIVATE_FILE_MODE);
  } catch (err) {
    const what = openProblem(path, err);
    if (what) throw new NotRegularFileError(path, what);
    throw err;
  }
  return regularOnly(fd, path, true);
}

/** Opens `path` for reading without blocking; throws NotRegularFileError unless a file. */
export function openRegularForRead(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const what = openProblem(path, err);
    if (what) throw new NotRegularFileError(path, what);
    throw err;
  }
  return regularOnly(fd, path);
}

/** Closes each descriptor; one already closed (or never valid) is passed over. */
export function closeQuietly(...fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch { /* already closed */ }
  }
}
