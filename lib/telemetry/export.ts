/**
 * Turn export over OpenTelemetry, as `run` and `proxy` see it: `openTelemetry` resolves the
 * settings and, only when export is configured, starts loading the SDK in the background
 * (lib/telemetry/otel.ts); the turn recorder (lib/retry/turn_recorder.ts) tells it of each
 * attempt's end and of each stopped retry, which never waits for the SDK, and `close`
 * waits for the last records at most the flush bound. A collector that is down or slow
 * costs no turn: its records are dropped and counted; the first drop is said at once in one
 * stderr line (a long-running proxy does not keep it until it stops), and the count at exit.
 */
import { VERSION } from "../version.ts";
import type { Outcome } from "../core/outcome.ts";
import type { AttemptEnd, OtelExport } from "./otel.ts";
import { redact } from "../text/redact.ts";
import { resolveTelemetry, type TelemetryTable } from "./settings.ts";

export type { AttemptEnd } from "./otel.ts";

/** Export of each turn and its attempts; null from `openTelemetry` when export is off. */
export interface TurnTelemetry {
  /** One attempt of a turn ended; `end.final`: no retry follows. Returns at once. */
  attemptEnded(outcome: Outcome, end: AttemptEnd): void;
  /** The retry that was to follow the turn's last attempt will not run. Returns at once. */
  retryStopped(session: string, turn: number): void;
  /**
   * The turn's Outcome was revised after its end was exported (`outcome.revision` set): a
   * log record `turnguard.turn.revised`, in the turn span's context. Returns at once.
   */
  turnRevised(outcome: Outcome): void;
  /** Sends what is queued, waiting at most the flush bound; says on stderr what was lost. */
  close(): Promise<void>;
}

/** An attempt's end or a stopped retry, kept until the SDK is loaded. */
type Early =
  | { kind: "attempt"; outcome: Outcome; end: AttemptEnd }
  | { kind: "stopped"; session: string; turn: number }
  | { kind: "revised"; outcome: Outcome };

/** Where `openTelemetry` reads its settings and says its one-line problems. */
export interface TelemetryOptions {
  /** `[telemetry]` of the config files, merged. */
  table: TelemetryTable | null;
  env: Record<string, string | undefined>;
  /** The journal name of the session (`--name`, else the agent profile). */
  name: string;
  warn: (line: string) => void;
}

/** Starts turn export when the config or the environment asks for it; null otherwise. */
export function openTelemetry(opts: TelemetryOptions): TurnTelemetry | null {
  const { settings, warnings } = resolveTelemetry(opts.table, opts.env, VERSION);
  for (const w of warnings) opts.warn(`turnguard: ${w}`);
  if (settings === null) return null;
  /** Records a turn's end makes: its span and its log record, or one of them. */
  const perTurn = (settings.traces ? 1 : 0) + (settings.logs ? 1 : 0);
  /** Records an event makes: an attempt's span, and the turn's records when it ends. */
  const recordsOf = (e: Early) =>
    e.kind === "stopped"
      ? perTurn
      : e.kind === "revised"
      ? (settings.logs ? 1 : 0)
      : (settings.traces ? 1 : 0) + (e.end.final ? perTurn : 0);
  let sink: OtelExport | null | undefined;
  /** What happened before the SDK was loaded (bounded like the export queue). */
  const early: Early[] = [];
  let lostEarly = 0;
  let loadError: string | null = null;
  // Said on stderr: a password in an endpoint URL, or in an error that quotes one, is not.
  const where = redact([settings.traces?.url, settings.logs?.url].filter(Boolean).join(", "));
  /** Set once the first drop was said, or once `close` began (its line says it all). */
  let quiet = false;
  const dropped = (why: string) => {
    if (quiet) return;
    quiet = true;
    opts.warn(
      `turnguard: telemetry: records are being dropped: not exported to ${where} (${
        redact(why)
      }); ` +
        "the count follows at exit",
    );
  };
  const apply = (to: OtelExport, e: Early) =>
    e.kind === "stopped"
      ? to.retryStopped(e.session, e.turn)
      : e.kind === "revised"
      ? to.turnRevised(e.outcome)
      : to.attemptEnded(e.outcome, e.end);
  const loading = import("./otel.ts").then((m) => new m.OtelExport(settings, opts.name, dropped))
    .then(
      (loaded) => {
        sink = loaded;
        for (const e of early) apply(loaded, e);
        early.length = 0;
      },
      (err: unknown) => {
        sink = null;
        loadError = err instanceof Error ? err.message : String(err);
        lostEarly += early.reduce((n, e) => n + recordsOf(e), 0);
        early.length = 0;
        dropped(loadError);
      },
    );
  const handle = (e: Early) => {
    try {
      if (sink) apply(sink, e);
      else if (sink === undefined && early.length < settings.queueSize) early.push(e);
      else {
        lostEarly += recordsOf(e);
        dropped(loadError ?? `more than ${settings.queueSize} turns before the exporter loaded`);
      }
    } catch (err) {
      // Telemetry never costs a turn: a record that cannot be made is one that is lost.
      lostEarly += recordsOf(e);
      loadError ??= err instanceof Error ? err.message : String(err);
      dropped(loadError);
    }
  };
  return {
    attemptEnded: (outcome, end) => handle({ kind: "attempt", outcome, end }),
    retryStopped: (session, turn) => handle({ kind: "stopped", session, turn }),
    turnRevised: (outcome) => handle({ kind: "revised", outcome }),
    async close() {
      quiet = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, settings.flushMs);
      });
      await Promise.race([loading.then(() => sink?.close()), bound]);
      clearTimeout(timer);
      const pending = early.reduce((n, e) => n + recordsOf(e), 0);
      const counts = sink?.counts ?? { accepted: 0, exported: 0, firstError: null };
      const lost = counts.accepted - counts.exported + lostEarly + pending;
      if (lost === 0) return;
      const total = counts.accepted + lostEarly + pending;
      const why = loadError ?? counts.firstError ??
        `no answer from the collector within the ${settings.flushMs} ms flush bound`;
      opts.warn(
        `turnguard: telemetry: ${lost} of ${total} records were not exported to ${where} (${
          redact(why)
        })`,
      );
    },
  };
}
