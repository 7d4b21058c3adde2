import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { journalFiles, readJournal } from "../lib/journal.ts";
import { BUN, ROOT, runProcess } from "./helpers/cli.ts";

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
  for (const file of journalFiles(path)) {
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
