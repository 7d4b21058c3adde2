/**
 * The recorder of `proxy --record`, on real files: the wire in the order it came, a
 * session file's writes before the agent line they came before, a late write after the
 * response (seen when the Outcome is made), a file outside HOME only named, and the file
 * created 0600.
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Recorder } from "../../../lib/record/recorder.ts";
import { parseTranscript } from "../../../lib/record/transcript.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("Recorder", () => {
  test("records the wire, the turn's writes in place, and a late write after the response", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-recorder-"));
    const home = join(dir, "home");
    const outside = join(dir, "outside.log");
    mkdirSync(join(home, "rec", "-w-p"), { recursive: true });
    const file = join(home, "rec", "-w-p", "s1.jsonl");
    appendFileSync(file, '{"before":"the turn"}\n');
    appendFileSync(outside, "old\n");
    const path = join(dir, "session.rec");
    const r = new Recorder({
      path,
      agent: "mine",
      command: "/usr/bin/mine",
      profile: "mine",
      sources: { logs: [outside], sessionRecords: ["$HOME/rec/{cwd:alnum}/{session}.jsonl"] },
      env: { HOME: home },
      cwd: dir,
      warn: (l) => {
        throw new Error(l);
      },
    });
    r.fromClient(
      bytes('{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w/p"}}\n'),
    );
    r.fromAgent(bytes('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n'));
    r.fromClient(bytes('{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId"'));
    r.fromClient(bytes(':"s1","prompt":[]}}\n'));
    // The agent reads the prompt from a pipe: it writes after the event loop turned.
    await new Promise((res) => setTimeout(res, 5));
    appendFileSync(file, '{"error":"quota"}\n{"half":');
    r.agentStderr(bytes("warn: something\n"));
    r.fromAgent(bytes('{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}\n'));
    await new Promise((res) => setTimeout(res, 20));
    appendFileSync(file, '"late"}\n');
    r.outcome("s1");
    r.clientClosed();
    await r.close({ code: 0 });

    expect(statSync(path).mode & 0o777).toBe(0o600);
    const { header, events } = parseTranscript(path, readFileSync(path, "utf8"));
    expect(header).toMatchObject({ agent: "mine", profile: "mine", files: "writes", cwd: dir });
    const seq = events.map((e) =>
      e.dir === "file"
        ? `file ${JSON.parse(e.line).path} ${JSON.stringify(JSON.parse(e.line).content)}`
        : `${e.dir} ${e.dir === "meta" ? e.line : e.line.slice(0, 40)}`
    );
    expect(seq).toEqual([
      'c2a {"jsonrpc":"2.0","id":1,"method":"sessio',
      'a2c {"jsonrpc":"2.0","id":1,"result":{"sessi',
      // The first look, before the prompt: the file outside HOME is named once.
      `meta not recorded: ${outside} is outside HOME`,
      'c2a {"jsonrpc":"2.0","id":2,"method":"sessio',
      "stderr warn: something",
      'file $HOME/rec/-w-p/s1.jsonl "{\\"error\\":\\"quota\\"}\\n"',
      'a2c {"jsonrpc":"2.0","id":2,"result":{"stopR',
      'file $HOME/rec/-w-p/s1.jsonl "{\\"half\\":\\"late\\"}\\n"',
      "meta the client closed stdin",
      "meta the agent exited (status 0)",
    ]);
    const files = events.filter((e) => e.dir === "file");
    expect(files.every((e) => JSON.parse(e.line).append === true)).toBe(true);
    const response = events.find((e) => e.line.includes("stopReason"))!;
    expect(files[1].t).toBeGreaterThanOrEqual(response.t);
  });

  test("a write after a turn's Outcome is recorded before the next prompt, not lost", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-recorder-"));
    const home = join(dir, "home");
    mkdirSync(join(home, "rec"), { recursive: true });
    const file = join(home, "rec", "s1.jsonl");
    const path = join(dir, "session.rec");
    const r = new Recorder({
      path,
      agent: "mine",
      command: "mine",
      profile: "mine",
      sources: { logs: [], sessionRecords: ["$HOME/rec/{session}.jsonl"] },
      env: { HOME: home },
      cwd: dir,
      warn: () => {},
    });
    const tick = () => new Promise((res) => setTimeout(res, 5));
    for (const n of [1, 2]) {
      r.fromClient(
        bytes(
          `{"jsonrpc":"2.0","id":${n},"method":"session/prompt","params":{"sessionId":"s1"}}\n`,
        ),
      );
      await tick();
      appendFileSync(file, `{"turn":${n}}\n`);
      r.fromAgent(bytes(`{"jsonrpc":"2.0","id":${n},"result":{"stopReason":"end_turn"}}\n`));
      r.outcome("s1");
      await tick();
      appendFileSync(file, `{"after":${n}}\n`);
    }
    await r.close(null);
    const { events } = parseTranscript(path, readFileSync(path, "utf8"));
    const seq = events.map((e) =>
      e.dir === "file" ? JSON.parse(e.line).content.trim() : `${e.dir} ${JSON.parse(e.line).id}`
    );
    expect(seq).toEqual([
      "c2a 1",
      '{"turn":1}',
      "a2c 1",
      '{"after":1}',
      "c2a 2",
      '{"turn":2}',
      "a2c 2",
      '{"after":2}',
    ]);
  });
});
