/**
 * Property: the proxy is byte-exact. Random message streams (JSON-RPC of every kind,
 * turns that start and end, CRLF, blank lines, garbage, invalid UTF-8, JSON arrays, an
 * unterminated last line, 10 MB lines) are written in random pieces through
 * `turnguard proxy -- cat`; what comes back must be exactly what went in, through both
 * directions of the proxy.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import { rng } from "../helpers/rng.ts";
import { BUN, MAIN, scratch, testEnv } from "../fixtures/acp/harness.ts";
import { DENO } from "../helpers/cli.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(30_000);

const enc = (s: string) => Buffer.from(s, "utf8");

/**
 * A random stream. Every request gets a success response later in the stream (the echo
 * agent sends it back as the agent's answer), so no request is left for turnguard to
 * answer and no turn ends in a way it would rewrite; error responses carry ids nobody
 * asked with.
 */
function randomStream(seed: number, bigLines: number): Buffer {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const int = (n: number) => Math.floor(r() * n);
  const words = ["hello", "wörld", "日本語", "emoji 🎉", 'quote " and \\ backslash', "\t tab", ""];
  const text = () => Array.from({ length: 1 + int(6) }, () => pick(words)).join(" ");
  const sessions = ["s1", "s2", "s3"];
  const parts: Buffer[] = [];
  const open: { id: number | string; result: unknown }[] = [];
  let nextId = 1;
  const eol = () => (r() < 0.3 ? "\r\n" : "\n");
  const line = (value: unknown) => parts.push(enc(JSON.stringify(value) + eol()));
  const count = 150 + int(150);
  for (let i = 0; i < count; i++) {
    const kind = int(16);
    const sessionId = pick(sessions);
    const id = r() < 0.2 ? `str-${nextId++}` : nextId++;
    switch (kind) {
      case 0:
      case 1: {
        line({
          jsonrpc: "2.0",
          id,
          method: "session/prompt",
          params: { sessionId, prompt: [{ type: "text", text: text() }], _meta: { k: int(9) } },
        });
        open.push({
          id,
          result: {
            stopReason: pick([
              "end_turn",
              "max_tokens",
              "refusal",
              "cancelled",
              "max_turn_requests",
            ]),
          },
        });
        break;
      }
      case 2:
      case 3:
      case 4:
        line({
          jsonrpc: "2.0",
          method: "session/update",
          params: {
            sessionId,
            update: pick([
              { sessionUpdate: "agent_message_chunk", content: { type: "text", text: text() } },
              { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: text() } },
              {
                sessionUpdate: "tool_call",
                toolCallId: `t${int(5)}`,
                title: text(),
                status: "pending",
              },
              {
                sessionUpdate: "tool_call_update",
                toolCallId: `t${int(5)}`,
                status: "completed",
                rawOutput: { id: int(5) },
              },
              { sessionUpdate: "some_future_kind", whatever: [1, 2, 3] },
            ]),
          },
        });
        break;
      case 5:
        line({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
        break;
      case 6: {
        line({
          jsonrpc: "2.0",
          id,
          method: pick([
            "initialize",
            "session/new",
            "_vendor/ext",
            "fs/read_text_file",
            "unknown/method",
          ]),
          params: { sessionId, x: text() },
        });
        open.push({ id, result: r() < 0.5 ? null : { ok: true, text: text() } });
        break;
      }
      case 7:
        if (open.length > 0) {
          const [answer] = open.splice(int(open.length), 1);
          line({ jsonrpc: "2.0", id: answer.id, result: answer.result });
        }
        break;
      case 8:
        line({
          jsonrpc: "2.0",
          id: `nobody-${i}`,
          error: { code: pick([429, 503, -32603]), message: text(), data: { errorKind: "x" } },
        });
        break;
      case 9:
        parts.push(enc(pick(["", "   ", "\t"]) + eol()));
        break;
      case 10:
        parts.push(
          enc(
            pick(["not json at all", '{"jsonrpc":', "}{", "[1,2,3]", "null", "42", '"str"']) +
              eol(),
          ),
        );
        break;
      case 11: {
        // Invalid UTF-8 inside and outside JSON strings.
        const bad = Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82, 0x80, 0xf0, 0x9f]);
        parts.push(
          Buffer.concat([
            enc(
              '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"',
            ),
            bad,
            enc('"}}}}' + eol()),
          ]),
        );
        parts.push(Buffer.concat([bad, enc(eol())]));
        break;
      }
      case 12:
        line([
          { jsonrpc: "2.0", id: `batch-${i}`, method: "session/prompt", params: { sessionId } },
          { jsonrpc: "2.0", method: "session/update" },
        ]);
        open.push({ id: `batch-${i}`, result: null });
        break;
      case 13:
        // Spaced-out JSON, keys in another order.
        parts.push(
          enc(
            `{ "params" : { "sessionId" : "${sessionId}" , "update" : { "content" : { "text" : "spaced" , "type" : "text" } , "sessionUpdate" : "agent_message_chunk" } } , "method" : "session/update" , "jsonrpc" : "2.0" }${eol()}`,
          ),
        );
        break;
      default: {
        // A mid-sized line: a tool result with a few KiB of content.
        const blob = "x".repeat(1000 + int(20_000));
        line({
          jsonrpc: "2.0",
          method: "session/update",
          params: {
            sessionId,
            update: {
              sessionUpdate: "tool_call_update",
              toolCallId: "big",
              content: [{ type: "content", content: { type: "text", text: blob } }],
            },
          },
        });
      }
    }
  }
  for (let b = 0; b < bigLines; b++) {
    const blob = "y".repeat(10 * 1024 * 1024);
    parts.splice(
      int(parts.length),
      0,
      enc(
        `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"${blob}"}}}}\n`,
      ),
    );
  }
  // Every request is answered, in random order, at the end.
  for (const answer of open.sort(() => r() - 0.5)) {
    line({ jsonrpc: "2.0", id: answer.id, result: answer.result });
  }
  if (r() < 0.5) parts.push(enc('{"jsonrpc":"2.0","method":"unterminated/last"}'));
  return Buffer.concat(parts);
}

/**
 * Writes `input` in random pieces through `turnguard proxy -- cat` and returns stdout.
 * Under Bun the proxy's I/O is Bun-native; under Deno it is the portable Node path.
 */
async function throughProxy(
  input: Buffer,
  seed: number,
  extra: string[],
  runtime: "bun" | "deno" = "bun",
): Promise<{ out: Buffer; code: number | null; stderr: string }> {
  const s = scratch();
  const argv = [MAIN, "proxy", ...extra, "--", "cat"];
  const child = spawn(
    runtime === "bun" ? BUN : DENO,
    runtime === "bun" ? argv : ["run", "-A", ...argv],
    {
      stdio: ["pipe", "pipe", "pipe"],
      env: testEnv(s),
      cwd: s.dir,
    },
  );
  const out: Buffer[] = [];
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => out.push(c));
  child.stderr.on("data", (c: Buffer) => stderr += c.toString());
  const closed = new Promise<number | null>((res) => child.once("close", (code) => res(code)));
  const r = rng(seed ^ 0x9e3779b9);
  for (let at = 0; at < input.length;) {
    const size = r() < 0.5 ? 1 + Math.floor(r() * 64) : 1 + Math.floor(r() * 256 * 1024);
    const piece = input.subarray(at, at + size);
    at += piece.length;
    if (!child.stdin.write(piece)) await new Promise((res) => child.stdin.once("drain", res));
    if (r() < 0.2) await new Promise((res) => setTimeout(res, 0));
  }
  child.stdin.end();
  const code = await closed;
  return { out: Buffer.concat(out), code, stderr };
}

describe("byte-exact pass-through", () => {
  const cases = [
    { seed: 1, big: 1, extra: [] as string[] },
    { seed: 2, big: 0, extra: ["--max-line-bytes", "4096"] },
    { seed: 3, big: 1, extra: ["--max-line-bytes", "100"] },
    { seed: 4, big: 0, extra: ["--turn-timeout", "30"] },
    { seed: 5, big: 0, extra: [] },
    { seed: 6, big: 1, extra: ["--max-line-bytes", "1048576"] },
    { seed: 7, big: 0, extra: ["--max-line-bytes", "512"] },
    { seed: 8, big: 0, extra: [] },
    { seed: 9, big: 0, extra: ["--max-line-bytes", "65536"] },
    { seed: 10, big: 1, extra: ["--max-line-bytes", "20000"] },
    { seed: 11, big: 0, extra: ["--turn-timeout", "30", "--rewrite-errors"] },
    { seed: 12, big: 0, extra: ["--max-line-bytes", "1"] },
    { seed: 13, big: 1, extra: [], runtime: "deno" as const },
    { seed: 14, big: 0, extra: ["--max-line-bytes", "512"], runtime: "deno" as const },
  ];
  for (const { seed, big, extra, runtime } of cases) {
    const name = `seed ${seed}${big ? " with a 10 MB line" : ""} ${extra.join(" ")}${
      runtime ? ` (${runtime})` : ""
    }`;
    test(name, async () => {
      const input = randomStream(seed, big);
      const { out, code, stderr } = await throughProxy(input, seed, extra, runtime);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(out.length).toBe(input.length);
      // Find the first difference for a readable failure, then compare all bytes.
      let first = -1;
      for (let i = 0; i < input.length; i++) {
        if (out[i] !== input[i]) {
          first = i;
          break;
        }
      }
      expect(first).toBe(-1);
      expect(Buffer.compare(out, input)).toBe(0);
    }, 60_000);
  }
});

describe("the client's input redirected from a file", () => {
  // Under Node, stdin from a file is an fs.ReadStream, which has a numeric `start`: the proxy
  // once took it for its own byte-source shape and failed at its first read. Node runs the
  // single-file bundle the npm package ships (`bun build --target=node`).
  for (const runtime of ["bun", "deno", "node"] as const) {
    test(`passes every byte (${runtime})`, () => {
      const s = scratch();
      const input = randomStream(21, 0);
      const file = join(s.dir, "client.in");
      writeFileSync(file, input);
      let command: string[];
      if (runtime === "node") {
        const bundle = join(s.dir, "turnguard.mjs");
        const b = spawnSync(BUN, ["build", "--target=node", MAIN, "--outfile", bundle]);
        expect(b.status).toBe(0);
        command = ["node", bundle];
      } else command = runtime === "bun" ? [BUN, MAIN] : [DENO, "run", "-A", MAIN];
      const fd = openSync(file, "r");
      try {
        const r = spawnSync(command[0], [...command.slice(1), "proxy", "--", "cat"], {
          stdio: [fd, "pipe", "pipe"],
          env: testEnv(s),
          cwd: s.dir,
          maxBuffer: 1 << 28,
        });
        expect(r.stderr.toString()).toBe("");
        expect(r.status).toBe(0);
        expect(Buffer.compare(r.stdout, input)).toBe(0);
      } finally {
        closeSync(fd);
      }
    });
  }
});
