/**
 * The file-system edge of the log scanner: the few calls snapshot and scan need, behind a
 * small interface so tests can fake a vanishing or unreadable file.
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from "node:fs";

/** A log file's identity and size at one moment. */
export interface FileStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** What snapshot and scan need from the file system. */
export interface LogFs {
  readDir(path: string): string[];
  stat(path: string): FileStat;
  /** Reads bytes [start, end) of a file. */
  read(path: string, start: number, end: number): Uint8Array;
}

/** The real file system. */
export const nodeLogFs: LogFs = {
  readDir: (path) => readdirSync(path),
  stat(path) {
    const s = statSync(path);
    return { dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
  },
  read(path, start, end) {
    const fd = openSync(path, "r");
    try {
      const buf = new Uint8Array(Math.max(0, end - start));
      let done = 0;
      while (done < buf.length) {
        const n = readSync(fd, buf, done, buf.length - done, start + done);
        if (n === 0) break;
        done += n;
      }
      return buf.subarray(0, done);
    } finally {
      closeSync(fd);
    }
  },
};

/** The error code of a failed file-system call (`ENOENT`, `EACCES`, ...). */
export function errCode(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? "EIO";
}
