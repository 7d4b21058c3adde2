import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { journalFiles } from "../../../lib/journal/files.ts";
import { JournalReader, readJournal } from "../../../lib/journal/reader.ts";
import { BUN, ROOT, runProcess } from "../../helpers/cli.ts";

const WRITER = join(ROOT, "tests", "fixtures", "journal", "writer.ts");
const COUNT = 3000;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-journal-conc-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Two real processes append COUNT records each (1..16 KiB) to one journal at once. */
async function twoWriters(path: string, rotateBytes?: number): Promise<void> {
  const env = { START_AT: String(Date.now() + 700) };
  const args = (
    w: string,
  ) => [BUN, WRITER, "bulk", path, w, String(COUNT), ...(rotateBytes ? [String(rotateBytes)] : [])];
  const [a, b] = await Promise.all([
    runProcess(args("A"), { env }),
    runProcess(args("B"), { env }),
  ]);
  expect([a.code, a.stderr, b.code, b.stderr]).toEqual([0, "", 0, ""]);
}

/** Every line is a whole record; each writer's records are all there, whole and in order. */
function checkJournal(path: string): number {
  const files = journalFiles(path);
  // A rotation right after the last record leaves no live file: then rotated ones exist.
  if (!existsSync(path)) expect(files.length).toBeGreaterThan(1);
  for (const file of files.filter((f) => f !== path || existsSync(f))) {
    const text = readFileSync(file, "utf8");
    expect(text.endsWith("\n")).toBe(true);
    for (const l of text.slice(0, -1).split("\n")) expect(l.startsWith('{"ts":"')).toBe(true);
  }
  const read = readJournal(path);
  expect(read.diagnostics).toEqual([]);
  const next: Record<string, number> = { A: 1, B: 1 };
  let switches = 0;
  let previous = "";
  for (const r of read.records) {
    expect(r.event).toBe("turn_ended");
    if (r.event !== "turn_ended") continue;
    expect(r.turn).toBe(next[r.session]++);
    const text = r.outcome.reply.text!;
    expect(text).toBe(`${r.session}:${r.turn}:` + "x".repeat(1024 * (1 + (r.turn % 16))));
    if (r.session !== previous) switches++, previous = r.session;
  }
  expect(next).toEqual({ A: COUNT + 1, B: COUNT + 1 });
  return switches;
}

describe("two processes writing one journal concurrently", () => {
  test(`${COUNT} records each, no rotation: no interleaved or torn line`, async () => {
    const path = join(dir, "journal.jsonl");
    await twoWriters(path, 1024 ** 3);
    expect(readdirSync(dir)).toEqual(["journal.jsonl"]);
    // The writers really overlapped: their records alternate many times.
    expect(checkJournal(path)).toBeGreaterThan(20);
  }, 60_000);

  test(
    `${COUNT} records each, rotating every 1 MiB: whole lines, nothing lost, order kept`,
    async () => {
      const path = join(dir, "journal.jsonl");
      await twoWriters(path, 1024 * 1024);
      const rotated = readdirSync(dir).filter((f) => /^journal\.jsonl\.\d+$/.test(f));
      expect(rotated.length).toBeGreaterThan(20);
      expect(readdirSync(dir).filter((f) => f.endsWith(".lock"))).toEqual([]);
      expect(checkJournal(path)).toBeGreaterThan(20);
    },
    60_000,
  );
});

describe("a reader racing a rotating writer", () => {
  /** Reads as fast as it can while a writer appends `turns` records, rotating every ~4. */
  async function race(path: string, turns: number, keep?: number) {
    const reader = new JournalReader(path);
    const seen: number[] = [];
    let resets = 0;
    let reads = 0;
    let done = false;
    const env = keep === undefined ? {} : { KEEP: String(keep) };
    const writer = runProcess([BUN, WRITER, "small", path, "A", String(turns), "600"], { env })
      .then((r) => {
        done = true;
        return r;
      });
    const take = () => {
      const read = reader.read();
      expect(read.diagnostics).toEqual([]);
      if (read.reset) resets++, seen.length = 0;
      for (const r of read.records) seen.push(r.turn);
    };
    while (!done) {
      take();
      reads++;
      await new Promise((r) => setImmediate(r));
    }
    const w = await writer;
    expect([w.code, w.stderr]).toEqual([0, ""]);
    take();
    expect(reads).toBeGreaterThan(50);
    return { seen, resets };
  }

  test("reads every record exactly once, in order, across hundreds of rotations", async () => {
    const path = join(dir, "journal.jsonl");
    const { seen, resets } = await race(path, 2000);
    expect(journalFiles(path).length).toBeGreaterThan(300);
    expect(resets).toBe(0);
    expect(seen).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
  }, 60_000);

  test("with old files deleted (their inode numbers reused): never a record twice", async () => {
    const path = join(dir, "journal.jsonl");
    const { seen } = await race(path, 2000, 2);
    expect(journalFiles(path).length).toBe(3);
    // Records in files deleted before the reader got to them are gone; the rest are read
    // once each, in order, up to the last one. (A reused inode number that cannot be told
    // from a truncation makes the reader start over with `reset`, which `seen` follows.)
    expect(seen.filter((t, i) => i > 0 && t <= seen[i - 1])).toEqual([]);
    expect(seen.at(-1)).toBe(2000);
  }, 60_000);
});
