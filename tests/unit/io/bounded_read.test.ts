/**
 * The bounded reader (lib/io/bounded_read.ts) against real hostile files: a FIFO with no
 * writer, a character device, a symbolic link, a sparse file of 8 GiB, a file held by a
 * write lease, and the per-turn budget of files, bytes and milliseconds.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  readBounded,
  ReadBudget,
  readWholeFile,
  WHOLE_FILE,
} from "../../../lib/io/bounded_read.ts";
import { scanAppended } from "../../../lib/cause/scan.ts";
import { MAX_LISTED_FILES, takeSnapshot } from "../../../lib/cause/snapshot.ts";

const dir = mkdtempSync(join(tmpdir(), "tg-bounded-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const budget = () => new ReadBudget();

describe("only regular files are read, and none blocks", () => {
  test("a FIFO without a writer is refused at once", async () => {
    const fifo = join(dir, "fifo");
    spawnSync("mkfifo", [fifo]);
    const r = await readBounded(fifo, WHOLE_FILE, budget());
    expect(r).toEqual({ ok: false, why: `${fifo} was not read: it is a FIFO` });
  });

  test("a character device is refused, not read forever", async () => {
    const r = await readBounded("/dev/zero", WHOLE_FILE, budget());
    expect(r).toEqual({ ok: false, why: "/dev/zero was not read: it is a character device" });
  });

  test("a symbolic link is not followed", async () => {
    const target = join(dir, "target");
    writeFileSync(target, "secret\n");
    const link = join(dir, "link");
    symlinkSync(target, link);
    const r = await readBounded(link, WHOLE_FILE, budget());
    expect(r).toMatchObject({
      ok: false,
      why: `${link} was not read: it is a symbolic link (not followed)`,
    });
  });

  test("a directory is refused", async () => {
    const r = await readBounded(dir, WHOLE_FILE, budget());
    expect(r.ok).toBe(false);
  });

  test("a regular file is read in the range picked from its fstat", async () => {
    const f = join(dir, "plain");
    writeFileSync(f, "0123456789");
    const r = await readBounded(f, (s) => ({ start: 4, end: s.size }), budget());
    if (!r.ok) throw new Error(r.why);
    expect(new TextDecoder().decode(r.bytes)).toBe("456789");
    expect(r.start).toBe(4);
    expect(r.stat.size).toBe(10);
    expect(r.short).toBeNull();
  });
});

describe("the budget", () => {
  test("an 8 GiB sparse file costs only the budget's bytes, its last ones", async () => {
    const f = join(dir, "huge");
    writeFileSync(f, "");
    truncateSync(f, 8 * 1024 ** 3);
    const b = new ReadBudget({ files: 4, bytes: 1024 * 1024, ms: 10_000 });
    const r = await readBounded(f, WHOLE_FILE, b);
    if (!r.ok) throw new Error(r.why);
    expect(r.bytes.length).toBe(1024 * 1024);
    expect(r.start).toBe(8 * 1024 ** 3 - 1024 * 1024);
    expect(r.short).toContain("budget was used up");
    expect(b.bytesLeft()).toBe(0);
    const next = await readBounded(join(dir, "plain"), WHOLE_FILE, b);
    expect(next).toMatchObject({ ok: false, spent: true });
  });

  test("files past the file budget are not opened", async () => {
    const b = new ReadBudget({ files: 2, bytes: 1 << 20, ms: 10_000 });
    const f = join(dir, "plain");
    expect((await readBounded(f, WHOLE_FILE, b)).ok).toBe(true);
    expect((await readBounded(f, WHOLE_FILE, b)).ok).toBe(true);
    const third = await readBounded(f, WHOLE_FILE, b);
    expect(third).toEqual({
      ok: false,
      why: `${f} was not read: the turn's 2-file budget was used up`,
      spent: true,
    });
  });

  test("a budget whose time ran out opens nothing", async () => {
    let t = 0;
    const b = new ReadBudget({ files: 9, bytes: 1 << 20, ms: 100 }, () => t);
    t = 100;
    const r = await readBounded(join(dir, "plain"), WHOLE_FILE, b);
    expect(r).toMatchObject({ ok: false, spent: true });
    if (!r.ok) expect(r.why).toContain("100 ms budget");
  });

  test("scan/explain inputs: the first maxBytes of a file, and a FIFO is an error", async () => {
    const f = join(dir, "input");
    writeFileSync(f, "BEGIN" + "a".repeat(100));
    expect(await readWholeFile(f, 5)).toEqual({ text: "BEGIN", cut: true });
    expect(await readWholeFile(f, 1000)).toEqual({ text: "BEGIN" + "a".repeat(100), cut: false });
    await expect(readWholeFile(join(dir, "fifo"), 1000)).rejects.toThrow("it is a FIFO");
  });
});

describe("a glob that matches 10,000 files", () => {
  test("the scan considers a bounded number, reads the budget's files, newest first, and says so", async () => {
    const logs = join(dir, "many");
    mkdirSync(logs);
    const spawnedAt = Date.now();
    const snapshot = takeSnapshot([join(logs, "*.log")], spawnedAt);
    for (let i = 0; i < 10_000; i++) {
      writeFileSync(join(logs, `${String(i).padStart(5, "0")}.log`), `line ${i}\n`);
    }
    // The newest file by mtime is the one the budget must reach first.
    const newest = join(logs, "09999.log");
    utimesSync(newest, new Date(spawnedAt + 60_000), new Date(spawnedAt + 60_000));
    const b = new ReadBudget({ files: 16, bytes: 1 << 20, ms: 20_000 });
    const t0 = performance.now();
    const r = await scanAppended(snapshot, spawnedAt, b);
    const ms = performance.now() - t0;
    expect(r.chunks.length).toBe(16);
    expect(r.chunks[0].path).toBe(newest);
    expect(b.files).toBe(16);
    expect(r.diagnostics).toContain(
      `10000 files match ${
        join(logs, "*.log")
      }; only the last ${MAX_LISTED_FILES} by name were considered`,
    );
    expect(r.diagnostics.find((d) => d.includes("16-file budget"))).toStartWith(
      `${MAX_LISTED_FILES - 16} log file(s) were not read`,
    );
    expect(ms).toBeLessThan(15_000); // a generous smoke bound
  });
});

/** Whether this kernel lets us take a write lease (leases-enable, a file we own). */
function leasesWork(): boolean {
  const r = spawnSync("python3", [
    "-c",
    "import fcntl,os,sys;fd=os.open(sys.argv[1],os.O_RDWR|os.O_CREAT);" +
    "fcntl.fcntl(fd,fcntl.F_SETLEASE,fcntl.F_WRLCK)",
    join(dir, "lease-probe"),
  ]);
  return r.status === 0;
}

/** Starts a process that holds a write lease on `path` for `seconds`, deaf to SIGIO. */
function holdLease(path: string, seconds: number) {
  const child = spawn("python3", [
    "-c",
    [
      "import fcntl, os, signal, sys, time",
      "signal.signal(signal.SIGIO, signal.SIG_IGN)",
      "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)",
      'os.write(fd, b\'{"sessionId":"sess-1"}\\n\')',
      "fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)",
      "print('leased', flush=True)",
      "time.sleep(float(sys.argv[2]))",
    ].join("\n"),
    path,
    String(seconds),
  ], { stdio: ["ignore", "pipe", "inherit"] });
  const leased = new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the lease holder exited (${code})`)));
  });
  return { child, leased };
}

describe.if(leasesWork())("a file held by a write lease", () => {
  test("is reported at once instead of blocking for the lease-break time", async () => {
    const f = join(dir, "leased.jsonl");
    const holder = holdLease(f, 30);
    try {
      await holder.leased;
      const t0 = performance.now();
      const r = await readBounded(f, WHOLE_FILE, budget());
      expect(r).toMatchObject({
        ok: false,
        why: `${f} was not read: another process holds a lease on it (EWOULDBLOCK)`,
      });
      expect(performance.now() - t0).toBeLessThan(10_000); // the kernel's break time is 45 s
    } finally {
      holder.child.kill("SIGKILL");
    }
  });
});
