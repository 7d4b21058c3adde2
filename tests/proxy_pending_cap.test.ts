/**
 * The proxy's bound on requests in flight: past `maxPending` of one side, a request is
 * answered by turnguard at once (a retryable `capacity` error) and not forwarded, so a peer
 * that never answers cannot grow turnguard without bound; every request still gets exactly
 * one answer. Real agent processes, the proxy in process.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { runProxy } from "../lib/proxy.ts";

setDefaultTimeout(60_000);

const CAP = 100;
const OVER = 10;

function start(command: string, args: string[]) {
  const input = new PassThrough();
  const output = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  output.on("data", (c: Buffer) => out += c.toString());
  stderr.resume();
  const running = runProxy({
    command,
    args,
    profile: { name: "fake", match: [], logs: [], logFormat: "plain", anchors: null },
    anchors: [],
    env: process.env,
    input,
    output,
    stderr,
    forwardSignals: false,
    maxPending: CAP,
  });
  return { input, running, lines: () => out.split("\n").filter((l) => l !== "") };
}

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

const request = (id: number, method = "session/new") =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: { cwd: "/" } }) + "\n";

const errorOf = (l: string) =>
  JSON.parse(l) as { id: number; error: { code: number; message: string } };

describe("requests in flight are bounded per direction", () => {
  test("client: past the cap each request is answered at once, the rest when the agent dies", async () => {
    // The agent reads everything and never answers; it exits when its input closes.
    const p = start("sh", ["-c", "cat >/dev/null"]);
    for (let id = 1; id <= CAP + OVER; id++) p.input.write(request(id));
    // The overflow is answered while the agent still runs.
    await until(() => p.lines().length >= OVER);
    const early = p.lines().map(errorOf);
    expect(early.map((r) => r.id)).toEqual(
      Array.from({ length: OVER }, (_, i) => CAP + 1 + i),
    );
    for (const r of early) {
      expect(r.error.code).toBe(-32603);
      expect(r.error.message).toBe(
        `turnguard: too many requests in flight (${CAP}); this one was not forwarded`,
      );
    }
    p.input.end();
    expect((await p.running).exitCode).toBe(0);
    const all = p.lines().map(errorOf);
    expect(all.length).toBe(CAP + OVER);
    expect(new Set(all.map((r) => r.id)).size).toBe(CAP + OVER);
  });

  test("agent: its requests past the cap are answered to it, not sent to the client", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-cap-"));
    const got = join(dir, "answers");
    const requests = Array.from({ length: CAP + OVER }, (_, i) => request(i + 1, "fs/read"))
      .join("");
    // The agent asks CAP+OVER times, then keeps the first OVER lines it is sent and exits.
    const p = start("sh", ["-c", `printf '%s' '${requests}'; head -n ${OVER} > '${got}'`]);
    const result = await p.running;
    p.input.end();
    expect(result.exitCode).toBe(0);
    expect(p.lines().map((l) => JSON.parse(l).id)).toEqual(
      Array.from({ length: CAP }, (_, i) => i + 1),
    );
    const answers = readFileSync(got, "utf8").split("\n").filter((l) => l !== "").map(errorOf);
    expect(answers.map((r) => r.id)).toEqual(Array.from({ length: OVER }, (_, i) => CAP + 1 + i));
    expect(answers.every((r) => r.error.code === -32603)).toBe(true);
  });
});
