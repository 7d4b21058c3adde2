/**
 * Edge cases of the proxy's request tracking: responses longer than the inspection limit,
 * ids beyond double precision, batches, and the errors turnguard makes up.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BUN, MAIN, ROOT, scratch, testEnv } from "../fixtures/acp/harness.ts";
import { scanPrefix } from "../../lib/acp/prefix.ts";

setDefaultTimeout(30_000);

const PAD_AGENT = join(ROOT, "tests/fixtures/acp/pad_agent.js");

/** Runs the proxy over `input` (written at once, then EOF); its stdout as lines. */
function proxyLines(
  input: string,
  extra: string[],
  env: Record<string, string> = {},
  agent: string[] = ["node", PAD_AGENT],
): Promise<{ lines: string[]; stderr: string }> {
  const s = scratch();
  const child = spawn(BUN, [MAIN, "proxy", ...extra, "--", ...agent], {
    stdio: ["pipe", "pipe", "pipe"],
    env: testEnv(s, env),
    cwd: s.dir,
  });
  let out = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => out += c.toString());
  child.stderr.on("data", (c: Buffer) => stderr += c.toString());
  child.stdin.end(input);
  return new Promise((res) =>
    child.once("close", () => res({ lines: out.split("\n").filter((l) => l !== ""), stderr }))
  );
}

/** Each line's id lexeme and whether it is a result or an error. */
function answers(lines: string[]): string[] {
  return lines.map((l) => {
    const m = l.match(/^\{"jsonrpc":"2\.0","id":((?:"[^"]*")|[-0-9.eE+]+),"(result|error)"/);
    return m ? `${m[1]} ${m[2]}` : `? ${l.slice(0, 80)}`;
  });
}

const req = (id: string, method: string, params = "{}") =>
  `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}\n`;
const PROMPT = '{"sessionId":"s","prompt":[]}';

describe("responses longer than the inspection limit", () => {
  test("end their request: the client gets exactly one answer each", async () => {
    const { lines } = await proxyLines(
      req("5", "initialize") + req("6", "session/prompt", PROMPT),
      ["--max-line-bytes", "200"],
    );
    expect(answers(lines)).toEqual(["5 result", "6 result"]);
  });
});

describe("client requests longer than the inspection limit", () => {
  test("are tracked: answered with an error when the agent dies", async () => {
    const big = `{"sessionId":"s","pad":"${"y".repeat(300)}"}`;
    const { lines } = await proxyLines(
      req("7", "session/load", big),
      ["--max-line-bytes", "200"],
      {},
      ["sh", "-c", "head -c 1 >/dev/null; exit 3"],
    );
    expect(answers(lines)).toEqual(["7 error"]);
    expect(lines[0]).toContain('"message":"agent exited with status 3"');
  });
});

describe("scanPrefix", () => {
  test.each([
    [
      '{"jsonrpc":"2.0","id":9007199254740993,"result":{"a',
      ["jsonrpc", "id", "result"],
      "9007199254740993",
      null,
    ],
    [
      '{"id":"a\\"b","method":"x/y","params":{"sessionId":"s"',
      ["id", "method", "params"],
      '"a\\"b"',
      "x/y",
    ],
    [
      '{"jsonrpc":"2.0","result":{"text":"}\\"id\\":1"},"id":1e0}',
      ["jsonrpc", "result", "id"],
      "1e0",
      null,
    ],
    ['{"jsonrpc":"2.0","id":12', ["jsonrpc", "id"], null, null],
    ['{"id":null,"error":{}}', ["id", "error"], "null", null],
    ["[1,2]", [], null, null],
  ])("%s", (text, keys, id, method) => {
    const scan = scanPrefix(text);
    expect([[...scan.keys], scan.idLexeme, scan.method]).toEqual([keys, id, method]);
  });
});

describe("ids turnguard answers", () => {
  test("are written back exactly as the client wrote them", async () => {
    const { lines } = await proxyLines(
      req("9007199254740993", "session/prompt", PROMPT) + req("1e0", "initialize") +
        req('"a\\u0062c"', "session/prompt", '{"sessionId":"t","prompt":[]}'),
      [],
      {},
      ["sh", "-c", "head -c 1 >/dev/null; exit 3"],
    );
    expect(answers(lines).sort()).toEqual(
      ['"a\\u0062c" error', "1e0 error", "9007199254740993 error"],
    );
  });
});

describe("batches", () => {
  const batch = "[" + req("1", "session/new").trim() + "," +
    req("2", "session/prompt", PROMPT).trim() + ',{"jsonrpc":"2.0","method":"n"}]\n';

  test("requests in a batch are answered when the agent dies", async () => {
    const { lines } = await proxyLines(batch, [], {}, [
      "sh",
      "-c",
      "head -c 1 >/dev/null; exit 3",
    ]);
    expect(answers(lines).sort()).toEqual(["1 error", "2 error"]);
  });

  test("a batch the agent answers in an array gets no second answer", async () => {
    const { lines } = await proxyLines(batch, [], { BATCH: "1" });
    expect(lines).toEqual([
      '[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]',
    ]);
  });
});

describe("a long agent line that names no session", () => {
  const prompts = (n: number) =>
    Array.from(
      { length: n },
      (_, i) => req(String(i + 1), "session/prompt", `{"sessionId":"s${i + 1}","prompt":[]}`),
    ).join("");

  test.each([[1, ["ok"]], [2, ["empty", "empty"]]])(
    "with %d turn(s) running counts as output only of a single one",
    async (n, statuses) => {
      const s = scratch();
      const outcomes = join(s.dir, "o.jsonl");
      await proxyLines(prompts(n), ["--max-line-bytes", "200", "--outcome-file", outcomes], {
        NOISE: String(n),
      });
      const got = readFileSync(outcomes, "utf8").trim().split("\n").map((l) =>
        JSON.parse(l).status
      );
      expect(got).toEqual(statuses);
    },
  );
});
