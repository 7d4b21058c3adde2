/**
 * The publish engine: the one call the proxy makes when an armed turn ends, before the
 * client sees the `session/prompt` response. Detection, the gate, unwrapping and the
 * fallback command, assembled into the Outcome's `publish` field and its diagnostics.
 * Never throws and never runs the fallback twice.
 */
import { errorText } from "../errors.ts";
import type { Publish } from "../core/outcome.ts";
import type { LoadedPublishDetector, ToolCallState } from "../plugin/api.ts";
import { findPublish } from "./detect.ts";
import { type FallbackRunner, runFallback } from "./fallback.ts";
import { publishGate } from "./gate.ts";
import type { PublishSettings } from "./settings.ts";
import { unwrapPrintedPublish } from "./unwrap.ts";
import { fillPlaceholders, layerVars, metaVars, type TurnVars } from "./vars.ts";

/** What the engine needs to know of an ended turn. */
export interface PublishTurn {
  sessionId: string | null;
  /** The agent's stopReason; null when it answered with an error. */
  stopReason: string | null;
  /** The turn failed (a JSON-RPC error, or turnguard decided so). */
  failed: boolean;
  /** The turn's `agent_message_chunk` text (at most 64 KiB). */
  text: string;
  /** The turn's tool calls, each merged by toolCallId. */
  toolCalls: Iterable<ToolCallState>;
  /** The `session/prompt` request's `params._meta` (its `turnguard` object sets variables). */
  promptMeta: unknown;
}

/** What stays the same across a proxy's turns. */
export interface PublishContext {
  /** Null when the fallback is not armed: nothing is looked at, `publish` is null. */
  settings: PublishSettings | null;
  /** The profile's detectors (see selectDetectors). */
  detectors: readonly LoadedPublishDetector[];
  /** Variables from the environment and `--var` flags. */
  vars: TurnVars;
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /** The fallback runner; tests may pass their own. */
  run?: FallbackRunner;
  /** Told one line when a reply that needed publishing was not (stderr in the proxy). */
  warn?: (line: string) => void;
}

/** The Outcome's `publish` field and what the engine has to say. */
export interface PublishSettlement {
  publish: Publish | null;
  diagnostics: string[];
  /** Set when a reply that needed publishing was not: why, in one line. */
  unpublished?: string;
}

/** Settles an ended turn's publish: detects, gates and, when needed, publishes once. */
export async function settlePublish(
  ctx: PublishContext,
  turn: PublishTurn,
): Promise<PublishSettlement> {
  const { settings } = ctx;
  if (settings === null) return { publish: null, diagnostics: [] };
  const diagnostics: string[] = [];
  const publish: Publish = {
    armed: true,
    detected: false,
    detector: null,
    channel: null,
    fallback: null,
  };
  /** A diagnostic that also says the reply was not published. */
  const notPublished = (line: string): PublishSettlement => {
    diagnostics.push(line);
    return { publish, diagnostics, unpublished: line };
  };
  try {
    const builtin = new Map(turn.sessionId === null ? [] : [["session_id", turn.sessionId]]);
    const vars = layerVars(builtin, ctx.vars, metaVars(turn.promptMeta, diagnostics));
    const channel = vars.get(settings.channelVar) || null;
    publish.channel = channel;
    const finding = findPublish(ctx.detectors, turn.toolCalls, channel, diagnostics);
    publish.detected = finding.detected;
    publish.detector = finding.detector;
    const verdict = publishGate({
      armed: true,
      stopReason: turn.stopReason,
      failed: turn.failed,
      channel,
      published: finding.detected,
      text: turn.text,
    });
    if (!verdict.fallback) {
      if (verdict.reason === "no_channel") {
        return notPublished(
          `publish: the reply was not published and no turn variable ${settings.channelVar} names its channel; nothing was sent`,
        );
      }
      return { publish, diagnostics };
    }
    const reply = unwrapPrintedPublish(turn.text, ctx.detectors, channel, diagnostics);
    const filled = fillPlaceholders(settings.command, layerVars(vars, new Map([["text", reply]])));
    if (!filled.ok) {
      const names = filled.missing.map((n) => `{${n}}`).join(", ");
      const why = `the fallback command needs ${names}, which no turn variable sets`;
      publish.fallback = { sent: false, exitCode: null, stderr: why };
      return notPublished(`publish: the reply was not published; ${why}; nothing was sent`);
    }
    const result = await (ctx.run ?? runFallback)({
      argv: filled.argv,
      stdin: settings.stdin ? reply : null,
      timeoutMs: settings.timeoutMs,
      env: ctx.env,
      cwd: ctx.cwd,
    });
    publish.fallback = { sent: result.sent, exitCode: result.exitCode };
    if (result.stderr !== "") publish.fallback.stderr = result.stderr;
    if (result.sent) {
      diagnostics.push(
        `publish: the agent did not publish its reply; turnguard sent it with ${filled.argv[0]}`,
      );
    } else {
      const how = result.timedOut
        ? `timed out after ${settings.timeoutMs}ms`
        : result.exitCode !== null
        ? `exited with status ${result.exitCode}`
        : result.signal !== null
        ? `was killed by ${result.signal}`
        : "could not run";
      const last = result.stderr.split("\n").filter((l) => l.trim() !== "").at(-1);
      return notPublished(
        `publish: the fallback ${filled.argv[0]} ${how}${
          last ? `: ${last}` : ""
        }; the reply was not published (not retried)`,
      );
    }
  } catch (err) {
    return notPublished(
      `publish: internal error, nothing more was sent: ${errorText(err)}`,
    );
  }
  return { publish, diagnostics };
}
