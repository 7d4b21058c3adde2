/**
 * lib/io/chunk_reader.ts, pipeReader: the agent's pipes are read a chunk at a time, each at
 * most PIPE_READ_BYTES, the next read only once the last was handed on. So a paused source
 * leaves what is not read in the pipe (its writer waits: backpressure reaches the agent),
 * and a flood never piles up in turnguard (the runtime's own stream once handed over 134
 * MiB in one read, after 2.5 s without a turn of the event loop).
 */
import { expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { closeSync, fstatSync, writeSync } from "node:fs";
import { libc } from "../../../lib/io/libc.ts";
import { PIPE_READ_BYTES, pipeReader } from "../../../lib/io/chunk_reader.ts";
import { StreamSource } from "../../../lib/proxy/agent_io.ts";

async function newPipe(): Promise<{ read: number; write: number }> {
  const c = await libc();
  const pipe = c?.pipe();
  if (!pipe) throw new Error("no pipe2 here");
  return pipe;
}

test("every byte in order, no read over PIPE_READ_BYTES; the descriptor closed at the end", async () => {
  const pipe = await newPipe();
  const total = 3 * PIPE_READ_BYTES + 12345;
  // A writer of its own (the pipe holds 64 KiB): `head -c` of a pattern.
  const writer = spawn("sh", ["-c", `yes 0123456789abcde | head -c ${total}`], {
    stdio: ["ignore", pipe.write, "inherit"],
  });
  closeSync(pipe.write);
  const closed = new Promise((r) => writer.once("close", r));
  const reader = pipeReader(pipe.read);
  const sizes: number[] = [];
  const parts: Uint8Array[] = [];
  for (let chunk = await reader.read(); chunk !== null; chunk = await reader.read()) {
    sizes.push(chunk.length);
    parts.push(chunk);
  }
  await closed;
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(total);
  expect(Math.max(...sizes)).toBeLessThanOrEqual(PIPE_READ_BYTES);
  const text = Buffer.concat(parts).toString();
  expect(text.startsWith("0123456789abcde\n0123456789abcde\n")).toBe(true);
  expect(text.split("\n").slice(0, -1).every((l) => l === "0123456789abcde")).toBe(true);
  expect(() => fstatSync(pipe.read)).toThrow();
});

test("a paused source reads nothing more: the writer waits until it resumes", async () => {
  const pipe = await newPipe();
  const total = 16 * 1024 * 1024;
  const writer = spawn("head", ["-c", String(total), "/dev/zero"], {
    stdio: ["ignore", pipe.write, "inherit"],
  });
  closeSync(pipe.write);
  let exited = false;
  writer.once("close", () => exited = true);
  const source = new StreamSource(() => pipeReader(pipe.read));
  let got = 0;
  let paused = false;
  const ended = new Promise<void>((done) =>
    source.start((chunk) => {
      got += chunk.length;
      if (!paused) paused = true, source.pause();
    }, done)
  );
  await new Promise((r) => setTimeout(r, 300));
  // One read (at most two, the one on its way when it paused) and no more.
  expect(got).toBeLessThanOrEqual(2 * PIPE_READ_BYTES);
  expect(exited).toBe(false);
  source.resume();
  await ended;
  expect(got).toBe(total);
});

test("cancelled with no read on its way, the descriptor is closed at once", async () => {
  const pipe = await newPipe();
  const reader = pipeReader(pipe.read);
  writeSync(pipe.write, "x\n");
  expect(await reader.read()).toEqual(new TextEncoder().encode("x\n"));
  reader.cancel();
  expect(() => fstatSync(pipe.read)).toThrow();
  expect(await reader.read()).toBeNull();
  closeSync(pipe.write);
});
