/**
 * turnguard's own stdout (lib/io/stdio.ts): every byte queued before exit reaches a slow
 * reader, in order, under Bun (descriptor writes) and Deno (Node streams); under Bun
 * whatever the descriptor is (a socket, a pipe that is full for a while, a file), and
 * without leaving its shared open file description non-blocking.
 */
import { describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, DENO, ROOT } from "../helpers/cli.ts";

const WRITER = join(ROOT, "tests", "fixtures", "stdio_writer.ts");
const COUNT = 48;

/** Runs the writer and reads its stdout slowly; resolves with what arrived, and its exit. */
function readSlowly(
  runtime: "bun" | "deno",
  how: string,
): Promise<{ out: Uint8Array; code: number | null }> {
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
  return new Promise((done) =>
    child.on("close", (code) => done({ out: Buffer.concat(parts), code }))
  );
}

/** Block i of COUNT starts with the digit i % 10, and nothing is missing. */
function expectBlocks(out: Uint8Array): void {
  expect(out.length).toBe(COUNT * 64 * 1024);
  for (let i = 0; i < COUNT; i++) expect(out[i * 64 * 1024]).toBe(0x30 + (i % 10));
}

describe("stdio: complete before exit", () => {
  for (const runtime of ["bun", "deno"] as const) {
    for (const how of ["text", "stream", "whole"]) {
      test(`${how} writes reach a slow reader whole and in order (${runtime})`, async () => {
        const { out, code } = await readSlowly(runtime, how);
        expectBlocks(out);
        expect(code).toBe(0);
      }, 60_000);
    }
  }
  test("pieces written at once reach a slow socket reader whole and in order (bun)", async () => {
    const { out, code } = await readSlowly("bun", "parts");
    expectBlocks(out);
    expect(code).toBe(0);
  }, 60_000);

  // A pipe (not a socket) whose reader comes late: it is full for half a second, so what
  // the main thread cannot write at once waits on the thread pool, behind nothing else.
  for (const how of ["text", "parts"]) {
    test(`${how} writes to a pipe read late arrive whole; the pipe is left blocking`, () => {
      const dir = mkdtempSync(join(tmpdir(), "turnguard-stdio-"));
      try {
        const file = join(dir, "out");
        const r = spawnSync("sh", [
          "-c",
          `"$0" "$1" "$2" "$3"; echo "exit $?" >&2`,
          BUN,
          WRITER,
          how,
          String(COUNT),
        ], { stdio: ["ignore", "pipe", "pipe"], maxBuffer: 1 << 28 });
        expectBlocks(r.stdout);
        expect(r.stderr.toString()).toBe("exit 0\n");
        // Through a shell pipeline to a reader that starts late, and into a regular file.
        for (const redirect of [`| (sleep 0.5; cat > "$4")`, `> "$4"`]) {
          const r = spawnSync("sh", [
            "-c",
            `"$0" "$1" "$2" "$3" ${redirect}`,
            BUN,
            WRITER,
            how,
            String(COUNT),
            file,
          ], {
            stdio: "inherit",
          });
          expect(r.status).toBe(0);
          expectBlocks(readFileSync(file));
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 60_000);
  }
});
