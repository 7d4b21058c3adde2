/**
 * turnguard's own stdout (lib/io/stdio.ts): every byte queued before exit reaches a slow
 * reader, in order, under Bun (descriptor writes) and Deno (Node streams); under Bun
 * whatever the descriptor is (a socket, a pipe that is full for a while, a file), and
 * without leaving its shared open file description non-blocking; a reader gone for good
 * (a socket's peer closed, or shut only its reading) ends the writes instead of holding them.
 */
import { describe, expect, test } from "bun:test";
import { dlopen, ptr } from "bun:ffi";
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
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

describe("stdio: a reader gone for good ends the writes", () => {
  /** A UNIX socket pair (what Node and Bun hand a child for "pipe"), our end shut at will. */
  function socketPair(): { ours: number; theirs: number; shutdown(how: number): void } {
    const c = dlopen("libc.so.6", {
      socketpair: { args: ["i32", "i32", "i32", "ptr"], returns: "i32" },
      shutdown: { args: ["i32", "i32"], returns: "i32" },
    });
    const fds = new Int32Array(2);
    expect(c.symbols.socketpair(1, /* AF_UNIX */ 1, /* SOCK_STREAM */ 0, ptr(fds))).toBe(0);
    return {
      ours: fds[0],
      theirs: fds[1],
      shutdown: (how) => void c.symbols.shutdown(fds[0], how),
    };
  }

  // The socket still polls writable when its peer only stopped reading, and `sendmsg` fails
  // with EPIPE: a write retried while the socket "has room" would wait forever.
  for (const [what, how] of [["shut its reading", 0], ["closed", -1]] as const) {
    test(`a socket whose reader ${what}: the writer ends`, async () => {
      const pair = socketPair();
      const child = spawn(BUN, [WRITER, "text", String(COUNT)], {
        stdio: ["ignore", pair.theirs, "inherit"],
      });
      closeSync(pair.theirs);
      if (how >= 0) pair.shutdown(how);
      else closeSync(pair.ours);
      const code = await Promise.race([
        new Promise<number | null>((done) => child.on("close", (code) => done(code))),
        new Promise<"hung">((done) => setTimeout(() => done("hung"), 30_000)),
      ]);
      if (code === "hung") child.kill("SIGKILL");
      if (how >= 0) closeSync(pair.ours);
      expect(code).toBe(0);
    }, 60_000);
  }
});

describe("stdio: a terminal", () => {
  // Under a pseudo-terminal (`script`): written from the main thread through a description of
  // its own (not on the thread pool), every byte arrives and the terminal's shared
  // description is left blocking (the writer exits 3 if not).
  test("writes to a terminal arrive whole; the terminal is left blocking (bun)", () => {
    const r = spawnSync("script", [
      "-qec",
      `"${BUN}" "${WRITER}" text ${COUNT}`,
      "/dev/null",
    ], { stdio: ["ignore", "pipe", "pipe"], maxBuffer: 1 << 28 });
    expect(r.status).toBe(0);
    expectBlocks(r.stdout);
  }, 60_000);
});
