/**
 * Reading the journal from its end (lib/journal/tail.ts) shows exactly what a full forward
 * read shows: the same latest turns, in the same order, with the same state — across
 * rotated files, block boundaries, concurrent writers, reused session ids and turn
 * numbers, torn and corrupt lines.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { foldRead, latestTurn, recentTurns, type TurnView } from "../../../lib/journal/fold.ts";
import { JournalReader, readJournal } from "../../../lib/journal/reader.ts";
import { formatRecord, type JournalRecord } from "../../../lib/journal/records.ts";
import { readTail } from "../../../lib/journal/tail.ts";
import { JournalWriter } from "../../../lib/journal/writer.ts";
import { testOutcome } from "../../helpers/outcome.ts";

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-tail-"));
  path = join(dir, "journal.jsonl");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A small deterministic random source. */
function rng(seed: number) {
  let x = seed;
  return (n: number) => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x % n;
  };
}

/** What a report shows of a turn. */
const shown = (t: TurnView) =>
  `${t.session}#${t.turn}/${t.name} ${t.running ? "running" : t.outcome?.status} ` +
  `a${t.attempt} ${t.retry?.state ?? "-"}${t.torn ? " torn" : ""}`;

/**
 * A journal of several writer processes: each runs turns of a few sessions (ids reused
 * across writers, turn numbers from 1 in each), some left running, with corrupt lines and
 * torn records between them. One writer's clock is an hour behind (order is by position,
 * never by time); some lines end in CRLF; some replies are longer than the largest block.
 */
function writeJournal(seed: number, records: number, rotateBytes: number): void {
  const rand = rng(seed);
  const w = new JournalWriter({ path, rotateBytes, keep: 100 });
  const writers = ["wa", "wb", "wc", "wd"];
  const counters = new Map<string, number>();
  const open = new Map<string, { session: string; turn: number; writer: string; name: string }>();
  for (let i = 0; i < records; i++) {
    const writer = writers[rand(writers.length)];
    const session = `s${rand(3)}`;
    const name = session === "s0" ? "n0" : "n1";
    const common = (t: { session: string; turn: number; writer: string; name: string }) => ({
      ts: new Date(Date.UTC(2026, 0, 1) + i * 1000 - (t.writer === "wc" ? 3_600_000 : 0))
        .toISOString(),
      name: t.name,
      session: t.session,
      turn: t.turn,
      pid: 100 + writers.indexOf(t.writer),
      writer: t.writer,
    });
    const roll = rand(10);
    const running = [...open.values()];
    if (roll < 4 || running.length === 0) {
      const key = `${writer}/${session}`;
      const turn = (counters.get(key) ?? 0) + 1;
      counters.set(key, turn);
      const t = { session, turn, writer, name };
      open.set(`${key}/${turn}`, t);
      const record: JournalRecord = {
        ...common(t),
        event: "turn_started",
        mode: "proxy",
        agent: "a",
        promptId: i,
      };
      // Now and then cut short, with the next record glued behind it.
      if (rand(12) === 0) appendFileSync(path, formatRecord(record).slice(0, 175 + rand(20)));
      else w.append(record);
    } else if (roll < 8) {
      const t = running[rand(running.length)];
      open.delete(`${t.writer}/${t.session}/${t.turn}`);
      const status = rand(2) === 0 ? "ok" : "failed";
      const record: JournalRecord = {
        ...common(t),
        event: "turn_ended",
        attempt: 0,
        outcome: testOutcome(status, rand(20) === 0 ? "long ".repeat(14_000) : `reply ${i}`),
      };
      if (rand(6) === 0) {
        // Cut short by a full disk: another record lands glued behind it.
        appendFileSync(path, formatRecord(record).slice(0, 180 + rand(60)));
      } else if (rand(5) === 0) {
        appendFileSync(path, formatRecord(record).replace(/\n$/, "\r\n"));
      } else {
        w.append(record);
      }
    } else if (roll < 9) {
      const t = running[rand(running.length)];
      w.append({
        ...common(t),
        event: "retry_scheduled",
        attempt: 1,
        of: 2,
        afterMs: 1000,
        nextAt: "2026-01-02T00:00:00.000Z",
        reason: "capacity",
      });
    } else {
      appendFileSync(path, rand(2) === 0 ? "not json\n" : "\n");
    }
  }
}

const targets = [undefined, "s0", "s1", "n0", "n1", "nope"];

describe("reading from the end shows what a full read shows", () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    for (const rotateBytes of [1 << 30, 4096]) {
      test(`seed ${seed}, ${rotateBytes < 1 << 20 ? "rotated" : "one file"}`, () => {
        writeJournal(seed, 300, rotateBytes);
        const full = foldRead(readJournal(path));
        for (const target of targets) {
          for (const limit of [1, 3, 10, 1000]) {
            for (const block of [61, 1024, 65536]) {
              const tail = foldRead(readTail(path, { target, limit }, block));
              const what = `target ${target} limit ${limit} block ${block}`;
              expect([what, recentTurns(tail, limit, target).map(shown)]).toEqual([
                what,
                recentTurns(full, limit, target).map(shown),
              ]);
              if (limit === 1) {
                expect([what, latestTurn(tail, target)?.key]).toEqual([
                  what,
                  latestTurn(full, target)?.key,
                ]);
              }
            }
          }
        }
      });
    }
  }

  test("a forward reader goes on from where the read from the end stopped", () => {
    writeJournal(7, 100, 2048);
    const tail = readTail(path, { limit: 1 });
    // A write in progress at the end is held back, then read once complete.
    const next = formatRecord({
      ts: "2026-02-01T00:00:00.000Z",
      name: "late",
      session: "s9",
      turn: 1,
      pid: 1,
      event: "turn_started",
      mode: "run",
      agent: "a",
      promptId: null,
    });
    appendFileSync(path, next.slice(0, 50));
    const reader = new JournalReader(path, tail.cursors);
    expect(reader.read().records).toEqual([]);
    expect(reader.heldHeads()).toEqual([]);
    appendFileSync(path, next.slice(50));
    expect(reader.read().records.map((r) => r.session)).toEqual(["s9"]);
    // Later rotations are followed, nothing read twice.
    new JournalWriter({ path, rotateBytes: 1 }).append({
      ts: "2026-02-01T00:00:01.000Z",
      name: "late",
      session: "s9",
      turn: 2,
      pid: 1,
      event: "turn_started",
      mode: "run",
      agent: "a",
      promptId: null,
    });
    expect(reader.read().records.map((r) => `${r.session}#${r.turn}`)).toEqual(["s9#2"]);
  });

  test("diagnostics name the line when the file was read from its start, else the byte", () => {
    writeJournal(8, 40, 1 << 30);
    appendFileSync(path, "garbage\n");
    const full = readJournal(path).diagnostics;
    expect(readTail(path, { limit: 1000 }).diagnostics).toEqual(full);
    const near = readTail(path, { limit: 1 }).diagnostics;
    expect(near.at(-1)).toMatch(/journal\.jsonl \(byte \d+\): skipped a corrupt line: not JSON/);
    expect(near.every((d) => / \(byte \d+\): /.test(d))).toBe(true);
  });
});
