import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  mkdtempSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { embeddedConfig, mergeConfigs, type Profile } from "../../../lib/config/config.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { findLogCause, readTurnLogs } from "../../../lib/cause/log_cause.ts";
import { type LogFs, nodeLogFs } from "../../../lib/io/logfs.ts";
import { ReadBudget } from "../../../lib/io/bounded_read.ts";
import { AnchorSchema } from "../../../lib/plugin/api.ts";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { SCAN_TAIL_BYTES, scanAppended } from "../../../lib/cause/scan.ts";
import { takeSnapshot } from "../../../lib/cause/snapshot.ts";

const classifier = buildClassifier([
  ...builtinPlugins().anchors,
  ...mergeConfigs([embeddedConfig()]).declarativeAnchors.map((a) => v.parse(AnchorSchema(), a)),
]);
const ERR =
  "E0707 08:34:23.910604  84 log.go:398] agent executor error: model unreachable: RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s.";

let dir: string;
let profile: Profile;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-scan-"));
  profile = {
    name: "agy",
    match: ["agy"],
    logs: [join(dir, "cli-*.log")],
    logFormat: "glog",
    anchors: null,
  };
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Snapshot, let `during` write the turn's bytes, then find the cause (pid 84). */
async function turn(during: () => void, fs: LogFs = nodeLogFs, pid: number | null = 84) {
  const spawnedAt = Date.now();
  const snapshot = takeSnapshot(profile.logs, spawnedAt, fs);
  during();
  const scan = await readTurnLogs(profile, snapshot, spawnedAt, new ReadBudget(), fs);
  return findLogCause({ snapshot, scan, pid, profile, classifier, now: Date.now() });
}

describe("scan only what the turn appended", () => {
  test("clean log → no cause", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "I0707 00:00:00.000000  84 a.go:1] start\n");
    const r = await turn(() => appendFileSync(f, "I0707 00:00:01.000000  84 a.go:1] done\n"));
    expect(r.cause).toBeNull();
  });

  test("stale error written before the snapshot, then a benign line → no cause", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, ERR + "\n");
    const r = await turn(() => appendFileSync(f, "I0707 00:00:01.000000  84 a.go:1] all good\n"));
    expect(r.cause).toBeNull();
  });

  test("clean prefix + appended error → cause, with its source offset", async () => {
    const f = join(dir, "cli-1.log");
    const prefix = "I0707 00:00:00.000000  84 a.go:1] start\n";
    writeFileSync(f, prefix);
    const r = await turn(() => appendFileSync(f, ERR + "\n"));
    expect(r.cause?.error.category).toBe("quota");
    expect(r.cause?.error.code).toBe(429);
    expect(r.cause?.error.anchor).toBe("agy.executor");
    expect(r.cause?.error.source).toEqual({ path: f, offset: prefix.length });
    expect(r.cause?.retry.afterMs).toBe((40 * 3600 + 52 * 60 + 46) * 1000);
  });

  test("the 4th-newest of 5 grown files holding the error is still found", async () => {
    const files = [1, 2, 3, 4, 5].map((i) => join(dir, `cli-${i}.log`));
    for (const f of files) writeFileSync(f, "I0707 00:00:00.000000  84 a.go:1] start\n");
    const r = await turn(() => {
      const t = Date.now() / 1000;
      files.forEach((f, i) => {
        appendFileSync(f, i === 1 ? ERR + "\n" : "I0707 00:00:01.000000  84 a.go:1] fine\n");
        utimesSync(f, t + i * 0.1, t + i * 0.1); // cli-2 is the 4th newest
      });
    });
    expect(r.cause?.error.source?.path).toBe(files[1]);
  });

  test("a file > 256 KiB read from a non-trivial offset yields exactly the capped tail", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "x".repeat(1000) + "\n");
    const appended = "a".repeat(SCAN_TAIL_BYTES) + "b".repeat(5000);
    const spawnedAt = Date.now();
    const snapshot = takeSnapshot(profile.logs, spawnedAt);
    appendFileSync(f, appended);
    const { chunks, diagnostics } = await scanAppended(snapshot, spawnedAt);
    expect(chunks).toHaveLength(1);
    expect(chunks[0].offset).toBe(1001 + 5000);
    expect(chunks[0].text).toBe(appended.slice(-SCAN_TAIL_BYTES));
    expect(diagnostics[0]).toContain(`read only the last ${SCAN_TAIL_BYTES}`);
  });

  test("mtime: a new log written 300 ms before spawn counts, one written 1.1 s before does not", async () => {
    const spawnedAt = Date.now();
    const snapshot = takeSnapshot(profile.logs, spawnedAt);
    const near = join(dir, "cli-near.log");
    const far = join(dir, "cli-far.log");
    writeFileSync(near, ERR + "\n");
    writeFileSync(far, ERR + "\n");
    utimesSync(near, (spawnedAt - 300) / 1000, (spawnedAt - 300) / 1000);
    utimesSync(far, (spawnedAt - 1100) / 1000, (spawnedAt - 1100) / 1000);
    const { chunks } = await scanAppended(snapshot, spawnedAt);
    expect(chunks.map((c) => c.path)).toEqual([near]);
  });

  test("a log rotated during the turn is read from its start", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "I0707 00:00:00.000000  84 a.go:1] old content that is long\n");
    const r = await turn(() => {
      renameSync(f, join(dir, "old.log.1"));
      writeFileSync(f, ERR + "\n");
    });
    expect(r.cause?.error.source).toEqual({ path: f, offset: 0 });
    expect(r.diagnostics).toEqual([]);
  });

  test("bytes appended before a rename during the turn are still scanned (logrotate)", async () => {
    const f = join(dir, "cli-1.log");
    const prefix = "I0707 00:00:00.000000  84 a.go:1] start\n";
    writeFileSync(f, prefix);
    const r = await turn(() => {
      appendFileSync(f, ERR + "\n");
      renameSync(f, join(dir, "rotated.old"));
      writeFileSync(f, "I0707 00:00:02.000000  84 a.go:1] fresh file\n");
    });
    expect(r.cause?.error.source).toEqual({
      path: join(dir, "rotated.old"),
      offset: prefix.length,
    });
    expect(r.diagnostics).toEqual([]);
  });

  test("a log renamed to another matching name is read from its old offset", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, ERR + "\n"); // stale: before the turn
    const r = await turn(() => {
      appendFileSync(f, "I0707 00:00:01.000000  84 a.go:1] benign\n");
      renameSync(f, join(dir, "cli-2.log"));
    });
    expect(r.cause).toBeNull();
  });

  test("a log truncated (shrunk) during the turn is read from 0", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "I".repeat(5000) + "\n");
    const r = await turn(() => writeFileSync(f, ERR + "\n"));
    expect(r.cause?.error.source?.offset).toBe(0);
  });

  test("missing log directory is a diagnostic, not an error", async () => {
    profile.logs = [join(dir, "nope", "cli-*.log")];
    const r = await turn(() => {});
    expect(r.cause).toBeNull();
    expect(r.diagnostics[0]).toBe(`log directory ${join(dir, "nope")} does not exist (yet)`);
  });

  test("unreadable log directory and a vanishing file are diagnostics", async () => {
    const denied: LogFs = {
      ...nodeLogFs,
      readDir: () => {
        throw Object.assign(new Error("denied"), { code: "EACCES" });
      },
    };
    expect((await turn(() => {}, denied)).diagnostics).toContain(
      `log directory ${dir} cannot be read (EACCES)`,
    );
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "I0707 00:00:00.000000  84 a.go:1] start\n");
    const r = await turn(() => rmSync(f));
    expect(r.diagnostics).toContain(`log ${f} vanished during the turn`);
  });
});

describe("pid attribution", () => {
  test("lines of another pid are ignored when the agent's own pid appears", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "");
    const r = await turn(() =>
      appendFileSync(
        f,
        "I0707 00:00:00.000000  99 a.go:1] other agent\n" + ERR.replace("  84 ", "  99 ") +
          "\nI0707 00:00:00.000000  84 a.go:1] ours, benign\n",
      )
    );
    expect(r.cause).toBeNull();
  });
  test("continuation lines follow their header's pid", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "");
    const r = await turn(() =>
      appendFileSync(f, "E0707 00:00:00.000000  84 a.go:1] failed:\n  RESOURCE_EXHAUSTED quota\n")
    );
    expect(r.cause?.error.message).toBe("RESOURCE_EXHAUSTED quota");
  });
  test("no line carries the agent's pid → all lines scanned, with a diagnostic", async () => {
    const f = join(dir, "cli-1.log");
    writeFileSync(f, "");
    const r = await turn(() => appendFileSync(f, ERR + "\n"), nodeLogFs, 4242);
    expect(r.cause?.error.anchor).toBe("agy.executor");
    expect(r.diagnostics).toContain(
      "no log line carries the agent's pid 4242; lines of every process were scanned",
    );
  });
});
