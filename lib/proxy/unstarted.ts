/**
 * Never a blank first turn: when the agent cannot be started, the client has usually sent
 * `initialize` already and waits for its answer. Closing stdout leaves it to guess; instead
 * each request it sent (waiting a bounded time for the first) is answered with a JSON-RPC
 * error that names the command and the reason, before the proxy exits 126/127.
 */
import { Buffer } from "node:buffer";
import type { ByteSink, ByteSource } from "./agent_io.ts";
import { crashResponse } from "./answer_rules.ts";
import { encodeLine, type JsonRpcId, parseBatch, parseMessage } from "../acp/jsonrpc.ts";

/** How long the proxy waits for the client's first request when the agent did not start. */
export const FIRST_REQUEST_WAIT_MS = 5000;
/** Bytes read from the client at most meanwhile: a client that floods gets no more. */
const MAX_READ_BYTES = 1024 * 1024;

/** The ids of the requests on `lines` (complete lines without their endings), batches included. */
export function requestIds(lines: readonly Uint8Array[]): JsonRpcId[] {
  return lines.flatMap((line) => parseBatch(line) ?? [parseMessage(line)])
    .flatMap((m) => m?.kind === "request" ? [m.id] : []);
}

/** The errors that answer the requests on `lines`: one line each, never for a notification. */
export function unstartedAnswers(
  lines: readonly Uint8Array[],
  message: string,
  exitCode: number,
): Uint8Array[] {
  return requestIds(lines).map((id) => encodeLine(crashResponse(id, message, exitCode), "\n"));
}

/**
 * Reads the client until its first request came (or it closed, or `waitMs` passed), then
 * answers every request read so far, and resolves once the answers are written (or the
 * client stopped reading). A `waitMs` of 0 (an interactive terminal) reads nothing.
 */
export async function answerUnstarted(opts: {
  input: ByteSource;
  output: ByteSink;
  message: string;
  exitCode: number;
  waitMs?: number;
}): Promise<void> {
  const { input, output } = opts;
  const lines = await readFirstRequests(input, opts.waitMs ?? FIRST_REQUEST_WAIT_MS);
  const answers = unstartedAnswers(lines, opts.message, opts.exitCode);
  let full = false;
  for (const answer of answers) full = !output.write(answer) || full;
  if (!full) return;
  await new Promise<void>((resolve) => {
    output.on("drain", resolve);
    output.on("error", resolve);
  });
}

/** The complete lines the client sent until its first request was among them. */
function readFirstRequests(input: ByteSource, waitMs: number): Promise<Uint8Array[]> {
  if (waitMs <= 0) return Promise.resolve([]);
  return new Promise((resolve) => {
    let pending = Buffer.alloc(0);
    let read = 0;
    let ended = false;
    let done = false;
    const lines: Uint8Array[] = [];
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      input.stop();
      // A last line without its newline counts when the client closed after it.
      if (ended && pending.length > 0) lines.push(pending);
      resolve(lines);
    };
    const onData = (chunk: Uint8Array) => {
      if (done) return;
      read += chunk.length;
      pending = Buffer.concat([pending, chunk]);
      let nl: number;
      while ((nl = pending.indexOf(0x0a)) >= 0) {
        const end = nl > 0 && pending[nl - 1] === 0x0d ? nl - 1 : nl;
        lines.push(pending.subarray(0, end));
        pending = pending.subarray(nl + 1);
      }
      if (requestIds(lines).length > 0 || read >= MAX_READ_BYTES) finish();
    };
    const timer = setTimeout(finish, waitMs);
    input.start(onData, () => {
      ended = true;
      finish();
    });
  });
}
