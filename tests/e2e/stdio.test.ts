/**
 * turnguard's own stdout (lib/io/stdio.ts): every byte queued before exit reaches a slow
 * reader, in order, under Bun (descriptor writes) and Deno (Node streams).
 */
import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { BUN, DENO, ROOT } from "../helpers/cli.ts";

const WRITER = join(ROOT, "tests", "fixtures", "stdio_writer.ts");
const COUNT = 48;

/** Runs the writer and reads its stdout slowly; resolves with what arrived. */
function readSlowly(runtime: "bun" | "deno", how: string): Promise<Uint8Array> {
  const argv = runtime === "bun"
    ? [BUN, WRITER, how, String(COUNT)]
    : [DENO, "run", "-A", WRITER, how, String(COUNT)];
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  const parts: Buffer[] = [];
  child.stdout!.on("data", (c: Buffer) => {
    parts.push(c);
    child.stdout!.pause();
    setTimeout(() => child.stdout!.resume(), 5);
  });
  return new Promise((done) => child.on("close", () => done(Buffer.concat(parts))));
}

describe("stdio: complete before exit", () => {
  for (const runtime of ["bun", "deno"] as const) {
    for (const how of ["text", "stream", "whole"]) {
      test(`${how} writes reach a slow reader whole and in order (${runtime})`, async () => {
        const out = await readSlowly(runtime, how);
        expect(out.length).toBe(COUNT * 64 * 1024);
        for (let i = 0; i < COUNT; i++) expect(out[i * 64 * 1024]).toBe(0x30 + (i % 10));
      }, 60_000);
    }
  }
});
