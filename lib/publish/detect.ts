/**
 * Publish detection over a turn's merged tool calls: runs the profile's detectors (a
 * throwing or malformed detector is a diagnostic, never a crash) and counts a publish only
 * when its call succeeded and went to this turn's channel (or named none). Pure.
 */
import { callPlugin } from "../plugin/call.ts";
import {
  type Detection,
  DetectionSchema,
  type LoadedPublishDetector,
  type ToolCallState,
} from "../plugin/api.ts";
import { callVerdict } from "./success.ts";

/** What detection found: the detector that saw the successful publish, and on which call. */
export interface PublishFinding {
  detected: boolean;
  detector: string | null;
  toolCallId: string | null;
}

/** One detector on one call, its answer validated; problems become diagnostics. */
export function runDetector(
  detector: LoadedPublishDetector,
  call: ToolCallState,
  diagnostics: string[],
): Detection | null {
  const detection = callPlugin(
    { name: `publish: detector ${detector.id}`, origin: detector.origin, answer: "detection" },
    () => detector.detect(call),
    DetectionSchema(),
    diagnostics,
  );
  return detection?.publish ? detection : null;
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
