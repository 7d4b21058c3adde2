/**
 * Turn export over OpenTelemetry, as `run` and `proxy` see it: `openTelemetry` resolves the
 * settings and, only when export is configured, starts loading the SDK in the background
 * (lib/telemetry/otel.ts); `turnEnded` never waits for it, and `close` waits for the last
 * records at most the flush bound. A collector that is down or slow costs no turn: its
 * records are dropped and counted; the first drop is said at once in one stderr line (a
 * long-running proxy does not keep it until it stops), and the count at exit.
 */
import { VERSION } from "../version.ts";
import type { Outcome } from "../core/outcome.ts";
import type { OtelExport } from "./otel.ts";
import { redact } from "../text/redact.ts";
import { resolveTelemetry, type TelemetryTable } from "./settings.ts";

/** Export of each turn's Outcome; null from `openTelemetry` when export is off. */
export interface TurnTelemetry {
  /** One turn (or retry attempt) ended; `conversationId` names its session when the
   * Outcome has none (`run`). Returns at once. */
  turnEnded(outcome: Outcome, conversationId?: string | null): void;
  /** Sends what is queued, waiting at most the flush bound; says on stderr what was lost. */
  close(): Promise<void>;
}

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
  /** Records per turn: a span and a log record, or one of them. */
  const perTurn = (settings.traces ? 1 : 0) + (settings.logs ? 1 : 0);
  let sink: OtelExport | null | undefined;
  /** Turns that ended before the SDK was loaded (bounded like the export queue). */
  const early: Array<[Outcome, string | null]> = [];
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
  const loading = import("./otel.ts").then(
    (m) => {
      sink = new m.OtelExport(settings, opts.name, dropped);
      for (const [outcome, conversationId] of early) sink.record(outcome, { conversationId });
      early.length = 0;
    },
    (err: unknown) => {
      sink = null;
      loadError = err instanceof Error ? err.message : String(err);
      lostEarly += early.length * perTurn;
      early.length = 0;
      dropped(loadError);
    },
  );
  return {
    turnEnded(outcome, conversationId = null) {
      try {
        if (sink) sink.record(outcome, { conversationId });
        else if (sink === undefined && early.length < settings.queueSize) {
          early.push([outcome, conversationId]);
        } else {
          lostEarly += perTurn;
          dropped(loadError ?? `more than ${settings.queueSize} turns before the exporter loaded`);
        }
      } catch (err) {
        // Telemetry never costs a turn: a record that cannot be made is one that is lost.
        lostEarly += perTurn;
        loadError ??= err instanceof Error ? err.message : String(err);
        dropped(loadError);
      }
    },
    async close() {
      quiet = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, settings.flushMs);
      });
      await Promise.race([loading.then(() => sink?.close()), bound]);
      clearTimeout(timer);
      const pending = early.length * perTurn;
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
