/**
 * docs/PLUGINS.md "Teach turnguard a new agent", run as written: each `$` line of the
 * section's shell blocks runs in order (the compiled binary as `turnguard` on PATH, a
 * scratch HOME, `examples/` of this checkout in the working directory), exits 0, and prints
 * the lines shown under it, in order (`…` stands for any text; blank lines are not
 * compared). Each file shown in the section holds the block shown for it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { ROOT, runProcess } from "../helpers/cli.ts";

setDefaultTimeout(60_000);

const DOC = join(ROOT, "docs", "PLUGINS.md");
const TITLE = "## Teach turnguard a new agent";

/** One fenced block of the section, with the prose before it. */
interface Block {
  lang: string;
  body: string;
  before: string;
}

/** The section's fenced blocks. */
function blocks(): Block[] {
  const doc = readFileSync(DOC, "utf8");
  const start = doc.indexOf(TITLE);
  if (start < 0) throw new Error(`${DOC}: no section "${TITLE}"`);
  const end = doc.indexOf("\n## ", start + TITLE.length);
  const section = doc.slice(start, end < 0 ? undefined : end);
  const out: Block[] = [];
  const fence = /```(\w*)\n([\s\S]*?)```/g;
  let last = 0;
  for (const m of section.matchAll(fence)) {
    out.push({ lang: m[1], body: m[2], before: section.slice(last, m.index) });
    last = m.index! + m[0].length;
  }
  return out;
}

/** A shell block's steps: each `$` command and the lines shown under it. */
function steps(body: string): { command: string; shown: string[] }[] {
  const out: { command: string; shown: string[] }[] = [];
  for (const line of body.split("\n")) {
    if (line.startsWith("$ ")) out.push({ command: line.slice(2), shown: [] });
    else if (line.trim() !== "") out.at(-1)?.shown.push(line);
  }
  return out;
}

/** A shown line as a pattern: `…` matches any text. */
function pattern(line: string): RegExp {
  const parts = line.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join(".*")}$`);
}

/** Whether `shown` occur in `actual` in order (other lines may come between). */
function inOrder(shown: string[], actual: string[]): boolean {
  let i = 0;
  for (const line of actual) if (i < shown.length && pattern(shown[i]).test(line)) i++;
  return i === shown.length;
}

let dir: string;
let bin: string;
beforeAll(() => {
  bin = join(mkdtempSync(join(tmpdir(), "tg-walk-bin-")), "turnguard");
  symlinkSync(ensureBinary(), bin);
  dir = mkdtempSync(join(tmpdir(), "tg-walk-"));
  mkdirSync(join(dir, "home"));
  symlinkSync(join(ROOT, "examples"), join(dir, "examples"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(join(bin, ".."), { recursive: true, force: true });
});

describe("docs/PLUGINS.md: Teach turnguard a new agent", () => {
  test("every file shown holds the block shown for it", () => {
    const files = blocks().filter((b) => b.lang !== "sh");
    expect(files.length).toBeGreaterThan(2);
    for (const b of files) {
      const named = [...b.before.matchAll(/`(examples\/[^`]+)`/g)].at(-1)?.[1];
      expect(named).toBeDefined();
      expect(readFileSync(join(ROOT, named!), "utf8")).toContain(b.body.trim());
    }
  });

  test("every step runs and prints what the section shows", async () => {
    const all = blocks().filter((b) => b.lang === "sh").flatMap((b) => steps(b.body));
    expect(all.length).toBeGreaterThanOrEqual(4);
    for (const { command, shown } of all) {
      const r = await runProcess(["sh", "-c", command], {
        cwd: dir,
        env: {
          PATH: `${join(bin, "..")}:${process.env.PATH}`,
          HOME: join(dir, "home"),
          XDG_CONFIG_HOME: join(dir, "home", ".config"),
          XDG_STATE_HOME: join(dir, "home", ".state"),
          TURNGUARD_CONFIG: undefined,
        },
      });
      const actual = (r.stdout + r.stderr).split("\n");
      expect({ command, code: r.code, shown: inOrder(shown, actual) ? shown : actual }).toEqual({
        command,
        code: 0,
        shown,
      });
    }
    // The recording step's file: private, as the section says.
    expect(statSync(join(dir, "scribe.rec")).mode & 0o777).toBe(0o600);
  });
});
