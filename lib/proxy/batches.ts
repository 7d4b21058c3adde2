/**
 * JSON-RPC batches (a line holding a JSON array) with some elements refused: a request a
 * single line would have refused (past the in-flight cap, or under an id the agent still
 * owes an answer to) is answered by turnguard and taken out of its batch, and the other
 * elements go on with their bytes unchanged. Used by both directions' readers
 * (lib/proxy/client_lines.ts, lib/proxy/agent_lines.ts).
 */
import { batchElements, batchMessages, type Message } from "../acp/jsonrpc.ts";
import { lineEnding } from "../acp/lines.ts";
import { concatBytes } from "../text/byte_window.ts";
import { DROP, PASS, type Verdict } from "./relay.ts";

const encoder = new TextEncoder();

/** One element of a batch line, as its side's reader sees it. */
export interface BatchElement {
  /** Its message; null when it is not one. */
  message: Message | null;
  /**
   * The element alone as a line (its bytes and the batch's line ending), what a refusal
   * reads its id and ending from; null when the elements could not be told apart.
   */
  single: Uint8Array | null;
}

/**
 * Reads a batch line: `each` is called for every element in order and says whether it
 * refused it (it answered it itself). Returns PASS when none was refused, else the batch
 * without those elements (DROP when none is left).
 */
export function filterBatch(
  line: Uint8Array,
  each: (element: BatchElement) => boolean,
): Verdict {
  const messages = batchMessages(line) ?? [];
  const found = messages.length > 0 ? batchElements(line) : null;
  const elements = found?.length === messages.length ? found : null;
  const ending = lineEnding(line);
  const refused = new Set<number>();
  messages.forEach((message, i) => {
    const at = elements?.[i];
    const single = at ? concat(line.subarray(at.start, at.end), ending || "\n") : null;
    if (each({ message, single })) refused.add(i);
  });
  if (refused.size === 0 || elements === null) return PASS;
  const kept = elements.filter((_, i) => !refused.has(i));
  if (kept.length === 0) return DROP;
  const parts = kept.flatMap(({ start, end }, i) => {
    const bytes = line.subarray(start, end);
    return i === 0 ? [bytes] : [",", bytes];
  });
  return { replace: concat("[", ...parts, "]", ending) };
}

/** Bytes and strings joined into one buffer. */
function concat(...pieces: (Uint8Array | string)[]): Uint8Array {
  return concatBytes(pieces.map((p) => typeof p === "string" ? encoder.encode(p) : p));
}
