/**
 * The plugin host: every user code plugin runs in a worker thread of its own, so a plugin
 * that throws, loops or runs long while a turn is decided costs at most its time budget and
 * never the turn's outcome. Calls are synchronous for the caller (the pure matcher stays
 * synchronous): the main thread posts the call and blocks on a shared buffer until the
 * worker answers or the budget of the open scope (lib/plugin/budget.ts) runs out; then the
 * worker is terminated, a diagnostic is raised (as a throw the matcher turns into one), and
 * a replacement worker starts importing the module at once, so it is ready for the next
 * turn. While the main thread waits, it answers the plugin's own calls of its context
 * (`context.classify`, lib/plugin/api.ts `PluginContext`) with the functions the built-in
 * packs use. Built-in packs and declarative anchors never come here: they run in-process.
 */
import type { Worker } from "node:worker_threads";
import { warnLine } from "../io/output.ts";
import { errorText } from "../errors.ts";
import { spendOf } from "./budget.ts";
import workerSource from "./worker.js" with { type: "text" };
import type { PluginContext } from "./api.ts";

/** Default time user code plugins may take, per plugin file, to decide one turn. */
export const DEFAULT_PLUGIN_BUDGET_MS = 2000;
/** How long a plugin module may take to import, at start-up and after a restart. */
export const PLUGIN_LOAD_TIMEOUT_MS = 10_000;
/** Largest JSON answer a plugin call may give. */
export const MAX_RESULT_BYTES = 64 * 1024;

/** Marks a function in the picture of a plugin's export (see lib/plugin/worker.js). */
export const FUNCTION_MARK = "$turnguard:function";

const REPLY = 0;
const LENGTH = 1;
const READY = 2;
const ASK = 3;
const HEADER_BYTES = 16;
/** REPLY's values: no answer yet, the call's answer, a question of the plugin's context. */
const ANSWERED = 1;
const ASKING = 2;

/** The context a worker's calls get when none is given: it answers nothing. */
const NO_CONTEXT: PluginContext = {
  classify() {
    throw new Error("no classifier is given to this plugin host");
  },
};

/** A key path into a plugin's default export (`["anchors", 0, "match"]`). */
export type ExportPath = ReadonlyArray<string | number>;

/** What a worker says once its module is imported. */
type LoadMessage = { op: "loaded"; shape: unknown } | { op: "failed"; message: string };

/** What a worker writes into the shared buffer: a call's answer, or why its import failed. */
type Reply = { ok?: unknown; threw?: string };

const clock = () => performance.now();

/**
 * One plugin file's worker. `load()` imports the module once at start-up and returns a
 * picture of its export; `call()` runs one of its functions under the open scope's budget.
 */
export class PluginWorker {
  /** The plugin file. */
  readonly path: string;
  /** Time the plugin file may take per budget scope (one turn), in milliseconds. */
  readonly budgetMs: number;
  /** Time its module may take to import, at start-up and after each restart. */
  readonly loadTimeoutMs: number;
  /** What the plugin's `context` calls are answered with. */
  readonly context: PluginContext;
  #worker: Worker | null = null;
  #startedAt = 0;
  #ctrl: Int32Array<ArrayBufferLike> = new Int32Array(0);
  #buffer: SharedArrayBuffer | null = null;
  #closed = false;

  constructor(
    path: string,
    budgetMs: number = DEFAULT_PLUGIN_BUDGET_MS,
    loadTimeoutMs: number = PLUGIN_LOAD_TIMEOUT_MS,
    context: PluginContext = NO_CONTEXT,
  ) {
    this.path = path;
    this.budgetMs = budgetMs;
    this.loadTimeoutMs = loadTimeoutMs;
    this.context = context;
  }

  /** Starts the worker and imports the module; resolves to the picture of its export. */
  load(): Promise<unknown> {
    const timeoutMs = this.loadTimeoutMs;
    const worker = this.#start();
    return new Promise((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        fn();
      };
      const onMessage = (m: LoadMessage | { op: "output" }) => {
        if (m.op === "output") return;
        if (m.op === "loaded") done(() => resolve(m.shape));
        else done(() => reject(new Error(m.message)));
      };
      const onError = (err: Error) => done(() => reject(err));
      const onExit = (code: number) =>
        done(() => reject(new Error(`its worker exited with code ${code} while loading`)));
      const timer = setTimeout(() => {
        this.#stop();
        done(() => reject(new Error(`did not finish loading within ${timeoutMs} ms`)));
      }, timeoutMs);
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
    });
  }

  /**
   * Calls the function at `path` in the plugin's export with `arg` and returns its answer.
   * The call is charged to the open budget scope (lib/plugin/budget.ts; outside one it has a
   * budget of its own). Throws the plugin's own error, or a budget error when the scope's
   * budget ran out (the worker is then stopped and a replacement starts importing at once).
   * After a budget error, the plugin's further calls in the same scope answer null without
   * running. Waiting for a replacement to finish importing is not charged to the budget; it
   * is bounded by the import timeout.
   */
  call(path: ExportPath, arg: unknown): unknown {
    if (this.#closed) throw new Error("the plugin host is closed");
    const spend = spendOf(this);
    if (spend.stopped) return null;
    const remaining = this.budgetMs - spend.spentMs;
    if (remaining <= 0) {
      spend.stopped = true;
      throw new Error(
        `used up its ${this.budgetMs} ms budget for this turn; its other calls were skipped`,
      );
    }
    const unready = this.#awaitImport();
    if (unready !== null) {
      spend.stopped = true;
      throw new Error(unready);
    }
    Atomics.store(this.#ctrl, REPLY, 0);
    this.#worker!.postMessage({ op: "call", path, arg });
    const started = clock();
    let answered = false;
    for (;;) {
      const left = remaining - (clock() - started);
      if (left <= 0) break;
      Atomics.wait(this.#ctrl, REPLY, 0, left);
      const state = Atomics.load(this.#ctrl, REPLY);
      if (state === ANSWERED) {
        answered = true;
        break;
      }
      if (state === ASKING) this.#answerQuestion();
    }
    spend.spentMs += clock() - started;
    if (!answered) {
      spend.stopped = true;
      this.#stop();
      this.#start();
      throw new Error(
        `ran longer than its ${this.budgetMs} ms budget for this turn; it was stopped ` +
          `(and is restarted for the next turn)`,
      );
    }
    const result = this.#reply();
    if (result.threw !== undefined) throw new Error(result.threw);
    return result.ok ?? null;
  }

  /** Stops the worker for good. */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  /**
   * Blocks until the current worker has imported the module (starting one if there is
   * none), at most until the import timeout counted from its start. Null when it is ready,
   * else why not (the worker is then stopped; the next call starts another).
   */
  #awaitImport(): string | null {
    if (this.#worker === null) this.#start();
    const deadline = this.#startedAt + this.loadTimeoutMs;
    for (;;) {
      const state = Atomics.load(this.#ctrl, READY);
      if (state === 1) return null;
      if (state === 2) {
        const why = this.#reply().threw ?? "unknown error";
        this.#stop();
        return `its restarted worker failed to load: ${why}`;
      }
      const left = deadline - clock();
      if (left <= 0) {
        this.#stop();
        return `its restarted worker did not finish loading within ${this.loadTimeoutMs} ms`;
      }
      Atomics.wait(this.#ctrl, READY, 0, left);
    }
  }

  /**
   * Answers the question the plugin asked its context (written by worker.js `ask`): runs
   * the context's function on the main thread and writes its answer, or why it failed,
   * back for the waiting worker.
   */
  #answerQuestion(): void {
    Atomics.store(this.#ctrl, REPLY, 0);
    let answer: Reply;
    try {
      const question = this.#reply() as { op?: unknown; arg?: unknown };
      if (question.op !== "classify" || typeof question.arg !== "string") {
        throw new Error(`context has no ${String(question.op)}(${typeof question.arg})`);
      }
      answer = { ok: this.context.classify(question.arg) };
    } catch (err) {
      answer = { threw: errorText(err) };
    }
    const bytes = new TextEncoder().encode(JSON.stringify(answer));
    new Uint8Array(this.#buffer!, HEADER_BYTES).set(bytes);
    Atomics.store(this.#ctrl, LENGTH, bytes.length);
    Atomics.store(this.#ctrl, ASK, 1);
    Atomics.notify(this.#ctrl, ASK);
  }

  /** The JSON the worker last wrote into the shared buffer. */
  #reply(): Reply {
    const length = Atomics.load(this.#ctrl, LENGTH);
    const bytes = new Uint8Array(this.#buffer!, HEADER_BYTES, length).slice();
    return JSON.parse(new TextDecoder().decode(bytes)) as Reply;
  }

  #start(): Worker {
    const buffer = new SharedArrayBuffer(HEADER_BYTES + MAX_RESULT_BYTES);
    // Loaded on first use: a run without code plugins never pays for worker_threads.
    const { Worker } = process.getBuiltinModule("node:worker_threads");
    const { pathToFileURL } = process.getBuiltinModule("node:url");
    const worker = new Worker(workerSource, { eval: true });
    worker.unref();
    // A worker that dies is replaced after its budget runs out; its error must not end
    // turnguard.
    worker.on("error", () => {});
    // What the plugin printed (worker.js takes its console and stdout): shown on stderr
    // through turnguard's sink, never on stdout (in proxy mode, the client's ACP wire).
    worker.on("message", (m: { op?: string; text?: unknown }) => {
      if (m?.op === "output" && typeof m.text === "string") {
        warnLine(`turnguard: plugin ${this.path}: ${m.text.replace(/\n$/, "")}`);
      }
    });
    worker.postMessage({ op: "load", url: pathToFileURL(this.path).href, sab: buffer });
    this.#worker = worker;
    this.#startedAt = clock();
    this.#buffer = buffer;
    this.#ctrl = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    return worker;
  }

  #stop(): void {
    const worker = this.#worker;
    this.#worker = null;
    if (worker) void worker.terminate();
  }

  /** Whether the current worker has finished importing its module (for tests). */
  get ready(): boolean {
    return this.#worker !== null && Atomics.load(this.#ctrl, READY) === 1;
  }
}

/**
 * Rebuilds a plugin's export from its picture: every function mark becomes a function that
 * calls the real one in the worker, so the export can be validated and used like an
 * in-process module.
 */
export function reviveExport(
  shape: unknown,
  callAt: (path: ExportPath, arg: unknown) => unknown,
  path: ExportPath = [],
): unknown {
  if (Array.isArray(shape)) return shape.map((item, i) => reviveExport(item, callAt, [...path, i]));
  if (shape === null || typeof shape !== "object") return shape;
  const record = shape as Record<string, unknown>;
  if (record[FUNCTION_MARK] === true) {
    const at = [...path];
    return (arg: unknown) => callAt(at, arg);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    out[key] = reviveExport(value, callAt, [...path, key]);
  }
  return out;
}
