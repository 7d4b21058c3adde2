/**
 * Wakes a reader when the journal changes: fs.watch on the journal's directory, with the
 * caller's tick as the fallback where watching is not possible (a missing directory, a
 * file system without notifications). Never a busy loop.
 */
import { type FSWatcher, watch } from "node:fs";
import { basename, dirname } from "node:path";

/** Something to wait on between reads. */
export interface ChangeSignal {
  /** Resolves when the journal may have changed, or after `ms` at the latest. */
  next(ms: number): Promise<void>;
  close(): void;
}

/** Watches the directory of the journal at `path`. */
export class JournalWatch implements ChangeSignal {
  #watcher: FSWatcher | null = null;
  #changed = false;
  #wake: (() => void) | null = null;

  constructor(path: string) {
    const base = basename(path);
    try {
      this.#watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
        if (name !== null && !String(name).startsWith(base)) return;
        this.#changed = true;
        this.#wake?.();
      });
      this.#watcher.on("error", () => this.close());
    } catch {
      this.#watcher = null;
    }
  }

  next(ms: number): Promise<void> {
    if (this.#changed) {
      this.#changed = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = null;
        this.#changed = false;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.#wake = done;
    });
  }

  close(): void {
    this.#watcher?.close();
    this.#watcher = null;
  }
}
