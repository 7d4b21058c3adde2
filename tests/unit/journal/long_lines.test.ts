/**
 * The journal reader (lib/journal/reader.ts) on lines of any length: a line that grows
 * while it is followed is taken in linear time, and one longer than MAX_LINE_BYTES is
 * skipped as it passes, never held whole.
 */
import { afterAll, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appendTo, JournalReader, MAX_LINE_BYTES } from "../../../lib/journal/reader.ts";
import { readTail } from "../../../lib/journal/tail.ts";
import { formatRecord, type JournalRecord } from "../../../lib/journal/records.ts";

const dir = mkdtempSync(join(tmpdir(), "tg-journal-long-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const started = (turn: number, promptId: string | null = null): JournalRecord => ({
  ts: "2026-01-01T00:00:00.000Z",
  name: "w1",
  session: "s1",
  turn,
  pid: 42,
  event: "turn_started",
  mode: "run",
  agent: "agy",
  promptId,
});

test("appendTo grows in place: a line built from many pieces is copied about twice", () => {
  let partial: Uint8Array = new Uint8Array(0);
  const piece = new Uint8Array(1000).fill(65);
  const buffers = new Set<ArrayBufferLike>();
  for (let i = 0; i < 10_000; i++) {
    partial = appendTo(partial, piece);
    buffers.add(partial.buffer);
  }
  expect(partial.length).toBe(10_000_000);
  expect(partial.every((b) => b === 65)).toBe(true);
  // Doubling: about log2(10 MB / 4 KiB) buffers, not one per piece.
  expect(buffers.size).toBeLessThan(20);
});

test("a line past MAX_LINE_BYTES, followed as it grows: skipped with one diagnostic, the records around it kept", () => {
  const path = join(dir, "journal.jsonl");
  writeFileSync(path, formatRecord(started(1)));
  const reader = new JournalReader(path);
  const records: JournalRecord[] = [];
  const diagnostics: string[] = [];
  const take = () => {
    const r = reader.read();
    records.push(...r.records);
    diagnostics.push(...r.diagnostics);
  };
  take();
  const step = 256 * 1024;
  const piece = "x".repeat(step);
  const t0 = performance.now();
  for (let written = 0; written <= MAX_LINE_BYTES + step; written += step) {
    appendFileSync(path, piece);
    take();
  }
  appendFileSync(path, "\n" + formatRecord(started(2)));
  take();
  const ms = performance.now() - t0;
  expect(records.map((r) => r.turn)).toEqual([1, 2]);
  expect(diagnostics).toEqual([
    `journal ${path}:2: a line longer than ${MAX_LINE_BYTES} bytes was skipped`,
  ]);
  expect(ms).toBeLessThan(30_000); // a generous smoke bound
});

test("a long line under the limit, followed as it grows, is read whole", () => {
  const path = join(dir, "journal2.jsonl");
  writeFileSync(path, "");
  const reader = new JournalReader(path);
  const record = formatRecord(started(7, "p".repeat(4 * 1024 * 1024)));
  const diagnostics: string[] = [];
  const records: JournalRecord[] = [];
  for (let at = 0; at < record.length; at += 4096) {
    appendFileSync(path, record.slice(at, at + 4096));
    const r = reader.read();
    records.push(...r.records);
    diagnostics.push(...r.diagnostics);
  }
  expect(diagnostics).toEqual([]);
  expect(records.map((r) => r.turn)).toEqual([7]);
});

test("read from the end (wait, log, retry): a line past MAX_LINE_BYTES is passed over, not carried", () => {
  const path = join(dir, "journal3.jsonl");
  writeFileSync(
    path,
    formatRecord(started(1)) + "y".repeat(MAX_LINE_BYTES + 3 * 1024 * 1024) + "\n" +
      formatRecord(started(2)),
  );
  const read = readTail(path, { limit: 10 });
  expect(read.records.map((r) => r.turn)).toEqual([1, 2]);
  expect(read.diagnostics).toEqual([
    `journal ${path}:2: skipped a line longer than ${MAX_LINE_BYTES} bytes`,
  ]);
});

test("read from the end: a long last line still being written is passed over", () => {
  const path = join(dir, "journal4.jsonl");
  writeFileSync(path, formatRecord(started(3)) + "z".repeat(MAX_LINE_BYTES + 1024 * 1024));
  const read = readTail(path, { limit: 10 });
  expect(read.records.map((r) => r.turn)).toEqual([3]);
});
