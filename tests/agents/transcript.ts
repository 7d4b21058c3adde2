/**
 * The corpus transcript format: turnguard's recording format (`turnguard proxy --record`,
 * `turnguard replay`), defined once in lib/record/transcript.ts.
 */
export {
  readTranscript,
  type RecordedFile,
  RecordedFileSchema,
  STDIN_CLOSED,
  type Transcript,
  type TranscriptEvent,
  TranscriptEventSchema,
  type TranscriptHeader,
  TranscriptHeaderSchema,
} from "../../lib/record/transcript.ts";
