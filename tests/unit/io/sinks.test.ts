/**
 * One sink per standard stream (lib/io/output.ts): nothing in turnguard's own code writes
 * to stdout or stderr but through it. The source of main.ts, lib/ and plugins/ is scanned
 * for the ways around it — `console.*`, `process.stdout`/`process.stderr`, the runtimes'
 * own handles, `….stdout.write(`/`….stderr.write(` on a stream handed in, and importing
 * the raw streams of lib/io/stdio.ts — so a new call site that bypasses the sink fails here.
 */
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "../../helpers/cli.ts";

/** The files allowed to touch the raw streams, and why. */
const ALLOWED: Record<string, string> = {
  "lib/io/output.ts": "the sinks themselves",
  "lib/io/stdio.ts": "the raw streams the sinks write through",
  "lib/plugin/worker.js":
    "a code plugin's worker: takes its console and process.stdout/stderr writes and hands them to the main thread's sink",
};

/** What bypasses the sinks. */
const BYPASSES: [string, RegExp][] = [
  ["console.*", /\bconsole\s*\.\s*[A-Za-z]+/],
  [
    "process.stdout/stderr",
    /\bprocess\s*\.\s*(?:stdout|stderr)\b|\bprocess\s*\[\s*["'](?:stdout|stderr)["']\s*\]/,
  ],
  ["the runtime's stdout/stderr", /\b(?:Bun|Deno)\s*\.\s*(?:stdout|stderr)\b/],
  ["a write to a stdout/stderr handed in", /\.\s*(?:stdout|stderr)\s*\.\s*write\s*\(/],
  [
    "the raw streams of lib/io/stdio.ts",
    /import\s*\{[^}]*\b(?<!type\s)(?:stdout|stderr)\b[^}]*\}\s*from\s*["'][^"']*stdio\.ts["']/,
  ],
];

/** The source without its comments (a comment may name what it does not do). */
function code(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " ")).replace(
    /(^|[^:"'`\\])\/\/.*$/gm,
    "$1",
  );
}

/** Each bypass in `source`, as `line: what`. */
export function bypasses(source: string): string[] {
  const found: string[] = [];
  code(source).split("\n").forEach((line, i) => {
    const first = BYPASSES.find(([, pattern]) => pattern.test(line));
    if (first) found.push(`${i + 1}: ${first[0]}`);
  });
  // An import may span lines.
  const imports = code(source).match(/import\s*\{[^}]*\}\s*from\s*["'][^"']*stdio\.ts["']/g) ?? [];
  for (const statement of imports) {
    const names = statement.slice(statement.indexOf("{") + 1, statement.indexOf("}")).split(",")
      .map((n) => n.trim()).filter((n) => !n.startsWith("type "));
    if (names.some((n) => n === "stdout" || n === "stderr")) {
      const what = "the raw streams of lib/io/stdio.ts";
      if (!found.some((f) => f.endsWith(what))) found.push(`import: ${what}`);
    }
  }
  return found;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(?:ts|js|mjs)$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

describe("one sink per standard stream", () => {
  test("nothing in main.ts, lib/ or plugins/ writes to stdout or stderr around the sinks", () => {
    const files = [
      join(ROOT, "main.ts"),
      ...sources(join(ROOT, "lib")),
      ...sources(join(ROOT, "plugins")),
    ];
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) => {
      const path = relative(ROOT, file);
      if (path in ALLOWED) return [];
      return bypasses(readFileSync(file, "utf8")).map((b) => `${path}:${b}`);
    });
    expect(found).toEqual([]);
  });

  test.each([
    ['console.log("hi");', ["1: console.*"]],
    ["  console . error(x)", ["1: console.*"]],
    ['process.stdout.write("x");', ["1: process.stdout/stderr"]],
    ['process["stderr"].write(x)', ["1: process.stdout/stderr"]],
    ["await Bun.stdout.writer()", ["1: the runtime's stdout/stderr"]],
    ["Deno.stderr.writeSync(b)", ["1: the runtime's stdout/stderr"]],
    ["opts.stderr.write(`turnguard: ${line}\\n`);", ["1: a write to a stdout/stderr handed in"]],
    [
      'import { stderr, stdout } from "../io/stdio.ts";',
      ["1: the raw streams of lib/io/stdio.ts"],
    ],
    ['import {\n  stdioIdle,\n  stdout,\n} from "./stdio.ts";', [
      "import: the raw streams of lib/io/stdio.ts",
    ]],
  ])("a bypass is found: %s", (source, expected) => {
    expect(bypasses(source)).toEqual(expected);
  });

  test.each([
    "// console.log is captured; process.stdout is the wire",
    "/* opts.stderr.write(x) */ const a = 1;",
    'import { type StdStream, stdioIdle } from "../io/stdio.ts";',
    'const url = "https://example.com"; // console.log',
    "stderrSink.line(text); stdoutSink.passThrough.write(bytes);",
    "child.stdin.write(line);",
  ])("not a bypass: %s", (source) => {
    expect(bypasses(source)).toEqual([]);
  });
});

describe("the sinks", () => {
  const KEY = "sk-ant-api03-" + "k".repeat(24);
  const AGENT_KEY = "sk-ant-api03-" + "a".repeat(24);

  test("redact and escape whatever reaches them; only passThrough leaves bytes as they are", () => {
    // A child process: the sinks write to its real stdout and stderr.
    const script = `
      import { lineSink, stderrSink, stdoutSink, warnLine, writeShown } from ${
      JSON.stringify(join(ROOT, "lib/io/output.ts"))
    };
      import { stdioIdle } from ${JSON.stringify(join(ROOT, "lib/io/stdio.ts"))};
      warnLine("warn ${KEY} \\x1b[2J");
      void stderrSink.line("line ${KEY}");
      void stdoutSink.text("text ${KEY}\\n");
      writeShown("shown \\u202e${KEY}\\n");
      void stdoutSink.json({ stopReason: "${KEY}", bidi: "\\u202e" });
      void stdoutSink.passThrough.write("agent ${AGENT_KEY} \\x1b[0m\\n");
      void stderrSink.passThrough.write("agent ${AGENT_KEY}\\n");
      const said = [];
      const sink = lineSink({ write: (c) => said.push(typeof c === "string" ? c : new TextDecoder().decode(c)) });
      sink.line("verbose ${KEY} \\x07");
      sink.passThrough(new TextEncoder().encode("agent ${AGENT_KEY}\\n"));
      void stderrSink.passThrough.write(said.join(""));
      await stdioIdle();
    `;
    const r = spawnSync(join(ROOT, "node_modules/.bin/bun"), ["-e", script], { encoding: "utf8" });
    const marker = "[REDACTED:anthropic]";
    expect(r.stdout.split("\n")).toEqual([
      `text ${marker}`,
      `shown \\u202e${marker}`,
      `{"stopReason":"${marker}","bidi":"\\u202e"}`,
      `agent ${AGENT_KEY} \x1b[0m`,
      "",
    ]);
    expect(r.stderr.split("\n")).toEqual([
      `warn ${marker} \\x1b[2J`,
      `line ${marker}`,
      `agent ${AGENT_KEY}`,
      // lineSink: the line made safe, the agent's bytes as they were.
      `verbose ${marker} \\x07`,
      `agent ${AGENT_KEY}`,
      "",
    ]);
  });
});
