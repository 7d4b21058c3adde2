/**
 * lib/proxy/agent_io.ts, StreamSource: a large chunk of short lines (what piles up in the
 * runtime's buffer while a flood is read) is handed on in pieces cut after line ends, and
 * the event loop turns between them: a timer due while the chunk is handled runs before
 * its end is handed on. Handed whole (as it was), the timer ran only after the whole chunk:
 * a SIGTERM handler waited seconds that way.
 */
import { expect, test } from "bun:test";
import { streamReader } from "../../../lib/io/chunk_reader.ts";
import { StreamSource } from "../../../lib/proxy/agent_io.ts";

test("a chunk of short lines goes in pieces, every byte in order; a timer runs in between", async () => {
  const chunk = new TextEncoder().encode("y\n".repeat(4 * 1024 * 1024));
  const stream = () =>
    streamReader(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(chunk);
          controller.close();
        },
      }),
    );
  const source = new StreamSource(stream);
  const got: Uint8Array[] = [];
  let handed = 0;
  let handedWhenTimerRan = -1;
  setTimeout(() => void (handedWhenTimerRan = handed), 0);
  let lines = 0;
  await new Promise<void>((ended) => {
    source.start((piece) => {
      // What the proxy does per line, roughly: look at each one.
      for (let i = piece.indexOf(10); i !== -1; i = piece.indexOf(10, i + 1)) lines++;
      got.push(piece);
      handed += piece.length;
    }, ended);
  });
  expect(lines).toBe(4 * 1024 * 1024);
  expect(handed).toBe(chunk.length);
  for (const piece of got) expect(piece.at(-1)).toBe(10);
  expect(got.length).toBeGreaterThan(1);
  expect(handedWhenTimerRan).toBeGreaterThanOrEqual(0);
  expect(handedWhenTimerRan).toBeLessThan(chunk.length);
});
