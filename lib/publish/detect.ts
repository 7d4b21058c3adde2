/**
 * Publish detection over a turn's merged tool calls: runs the profile's detectors (a
 * throwing or malformed detector is a diagnostic, never a crash) and counts a publish only
 * when its call succeeded and went to this turn's channel (or named none). Pure.
 */
import * as v from "valibot";
import { errorText } from "../anchors.ts";
import {
  type Detection,
  DetectionSchema,
  type LoadedPublishDetector,
  type ToolCallState,
} from "../plugin.ts";
import { callVerdict } from "./success.ts";

/** What detection found: the detector that saw the successful publish, and on which call. */
export interface PublishFinding {
  detected: boolean;
  detector: string | null;
  toolCallId: string | null;
}

function where(detector: LoadedPublishDetector): string {
  return detector.origin ? ` (${detector.origin})` : "";
}

/** One detector on one call, its answer validated; problems become diagnostics. */
export function runDetector(
  detector: LoadedPublishDetector,
  call: ToolCallState,
  diagnostics: string[],
): Detection | null {
  let result: unknown;
  try {
    result = detector.detect(call);
  } catch (err) {
    diagnostics.push(`publish: detector ${detector.id}${where(detector)} threw: ${errorText(err)}`);
    return null;
  }
  if (result === null || result === undefined) return null;
  const parsed = v.safeParse(DetectionSchema, result);
  if (!parsed.success) {
    diagnostics.push(
      `publish: detector ${detector.id}${where(detector)} returned an invalid detection: ${
        parsed.issues[0].message
      }`,
    );
    return null;
  }
  return parsed.output.publish ? parsed.output : null;
}

/**
 * Finds a successful publish of this turn's reply among its calls. A publish whose call
 * failed, was cancelled or never completed does not count, nor one to another channel; one
 * that names no channel counts for any channel. Each near miss leaves a diagnostic.
 */
export function findPublish(
  detectors: readonly LoadedPublishDetector[],
  calls: Iterable<ToolCallState>,
  channel: string | null,
  diagnostics: string[],
): PublishFinding {
  for (const call of calls) {
    for (const detector of detectors) {
      const detection = runDetector(detector, call, diagnostics);
      if (!detection) continue;
      const verdict = callVerdict(call);
      if (!verdict.succeeded) {
        diagnostics.push(
          `publish: ${detector.id} saw tool call ${call.toolCallId} publish, but it did not succeed (${verdict.reason})`,
        );
        break;
      }
      const to = detection.channel ?? null;
      if (to !== null && channel !== null && to !== channel) {
        diagnostics.push(
          `publish: ${detector.id} saw tool call ${call.toolCallId} publish to channel ${to}, not this turn's ${channel}`,
        );
        break;
      }
      return { detected: true, detector: detector.id, toolCallId: call.toolCallId };
    }
  }
  return { detected: false, detector: null, toolCallId: null };
}
