/**
 * Where a reading loop gets its chunks: a ReadableStream, or the read end of a pipe of
 * turnguard's own read a bounded chunk at a time (`pipeReader`). The agent's stdout and
 * stderr are read through the second under Bun (lib/agent/bun_spawn.ts), for the reason in
 * pipeReader's doc.
 */
import { bun } from "./bun_api.ts";
import { closeQuietly } from "./private_file.ts";

/** One stream's chunks, one at a time. */
export interface ChunkReader {
  /** The next chunk; null at the end (a failed read throws). */
  read(): Promise<Uint8Array | null>;
  /** Gives up: a read on its way may still resolve, and is not handed on. */
  cancel(): void;
}

/** A ReadableStream as a ChunkReader. */
export function streamReader(stream: ReadableStream<Uint8Array>): ChunkReader {
  const reader = stream.getReader();
  return {
    read: async () => {
      const { value, done } = await reader.read();
      return done ? null : value;
    },
    cancel: () => void reader.cancel().catch(() => {}),
  };
}

/** Bytes one read of a pipe takes at most (the runtime's read size for a descriptor). */
export const PIPE_READ_BYTES = 256 * 1024;

/**
 * The read end `fd` of a pipe of turnguard's own, read as Bun reads a descriptor
 * (`Bun.file(fd).stream()`): each read waits in the event loop for the pipe to be readable,
 * takes at most PIPE_READ_BYTES without blocking (`preadv2` with `RWF_NOWAIT` on the
 * runtime's own duplicate of the descriptor, so no flag of the pipe changes) and is handed
 * on before the next is made.
 *
 * Why not the stream Bun gives for a child's pipe: it reads ahead into its buffer in one
 * loop on the main thread for as long as the writer keeps the pipe from running dry. Beside
 * two CPU burners a flooding agent had 38–134 MiB handed over in one read, after up to
 * 2.5 s without a turn of the event loop (a SIGTERM handler waited that long), and that
 * memory was outside any budget. Why not `fs.read` on the thread pool: a read that waits
 * there holds a pool thread, and the runtime's other pool work (closing a child's stdin
 * among it) starved: the agent never saw its stdin end.
 *
 * `fd` is closed once reading ends or is cancelled (the runtime closes only its duplicate).
 * Bun only: elsewhere a pipe is read through the runtime's streams.
 */
export function pipeReader(fd: number): ChunkReader {
  const reader = streamReader(bun!.file(fd).stream());
  let closed = false;
  const close = () => {
    if (!closed) closed = true, closeQuietly(fd);
  };
  return {
    read: async () => {
      if (closed) return null;
      try {
        const chunk = await reader.read();
        if (chunk === null) close();
        return chunk;
      } catch (error) {
        close();
        throw error;
      }
    },
    cancel: () => {
      reader.cancel();
      close();
    },
  };
}
