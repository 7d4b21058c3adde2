/**
 * docs/CLIENTS.md, run as written: every acpx and SDK command line of its `sh` blocks, and
 * the command and args of its Zed `agent_servers` settings, against the fake agents of
 * examples/agents/ and the compiled turnguard on PATH.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawn } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { ensureBinary } from "../helpers/binary.ts";
import { type Finished, homeEnv, ROOT, runProcess } from "../helpers/cli.ts";
import { exampleFiles } from "../../scripts/release.ts";

setDefaultTimeout(60_000);

const DOC = readFileSync(join(ROOT, "docs", "CLIENTS.md"), "utf8");
const blocks = (lang: string) =>
  [...DOC.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]);
const commandLines = (program: string) =>
  blocks("sh").flatMap((b) => b.split("\n")).filter((l) => l.startsWith(`${program} `));

const ANSWER = "Hello from the example agent.";
const CAUSE = "backend: 429 Too Many Requests (rate limit exceeded for this API key)";

let home: string;
let path: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-clients-"));
  path = [dirname(ensureBinary()), join(ROOT, "node_modules", ".bin"), process.env.PATH].join(":");
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** Runs one documented command line through the shell, from the checkout's root. */
const shell = (line: string): Promise<Finished> =>
  runProcess(["bash", "-c", line], { cwd: ROOT, env: homeEnv(home, { PATH: path }) });

/** What each documented line must do: the answering agent's text, or the surfaced cause. */
function expectOutcome(line: string, r: Finished, failure: string) {
  if (line.includes("acp_agent.mjs throw")) {
    // The SDK's bare "Internal error" (acpx prints data.details itself); the cause with
    // --rewrite-errors.
    expect({ line, code: r.code }).toEqual({ line, code: 1 });
    const sdk = line.startsWith("node examples/clients/");
    expect(r.stdout + r.stderr).toContain(
      sdk && !line.includes("--rewrite-errors")
        ? "[error -32603] Internal error (rate_limit)"
        : sdk
        ? `[error -32603] Error: ${CAUSE} (rate_limit)`
        : `[error] RUNTIME: Error: ${CAUSE}`,
    );
  } else if (line.includes("no-such-agent")) {
    expect({ line, code: r.code }).toEqual({ line, code: 1 });
    expect(r.stdout + r.stderr).toContain(
      "turnguard: the agent could not be started: no-such-agent: command not found",
    );
  } else if (line.includes("acp_agent.mjs answer")) {
    expect({ line, code: r.code }).toEqual({ line, code: 0 });
    expect(r.stdout).toContain(ANSWER);
  } else {
    expect(line).toContain("acp_agent.mjs swallow");
    expect({ line, code: r.code }).toEqual({ line, code: 1 });
    expect(r.stdout + r.stderr).toContain(failure);
  }
}

describe("docs/CLIENTS.md", () => {
  test("acpx (the current release) through turnguard proxy", async () => {
    const lines = commandLines("acpx");
    expect(lines.length).toBe(3);
    for (const line of lines) expectOutcome(line, await shell(line), `[error] RUNTIME: ${CAUSE}`);
  });

  test("the ACP SDK client example spawning turnguard proxy", async () => {
    const lines = commandLines("node examples/clients/acp_client.mjs");
    expect(lines.length).toBe(4);
    for (const line of lines) {
      const r = await shell(line);
      expectOutcome(line, r, `[error -32603] ${CAUSE} (rate_limit)`);
      if (r.code === 0) expect(r.stdout).toBe(`${ANSWER}\n[stop: end_turn]\n`);
    }
  });

  test("Zed agent_servers: its command and args, started as Zed starts them", async () => {
    const settings = JSON.parse(blocks("json").find((b) => b.includes("agent_servers"))!);
    const servers = Object.values(settings.agent_servers) as {
      type: string;
      command: string;
      args: string[];
      env: Record<string, string>;
    }[];
    expect(servers.length).toBe(1);
    for (const server of servers) {
      expect(server.type).toBe("custom");
      const args = server.args.map((a) => a.replace("/path/to/turnguard", ROOT));
      // No shell: the command as given, found on PATH.
      const child = spawn(server.command, args, {
        env: { ...process.env, ...homeEnv(home, { PATH: path }), ...server.env },
        stdio: ["pipe", "pipe", "pipe"],
      });
      const exited = new Promise<number | null>((r) => child.once("close", (c) => r(c)));
      let text = "";
      const app = acp.client({ name: "zed-like" }).onNotification(
        "session/update",
        ({ params }) => {
          const u = params.update;
          if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
            text += u.content.text;
          }
        },
      );
      const stream = acp.ndJsonStream(
        Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
      );
      const failure = await app.connectWith(stream, async (ctx) => {
        await ctx.request("initialize", {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {},
        });
        const { sessionId } = await ctx.request("session/new", { cwd: home, mcpServers: [] });
        try {
          await ctx.request("session/prompt", {
            sessionId,
            prompt: [{ type: "text", text: "hi" }],
          });
          return null;
        } catch (err) {
          return err as { code: number; message: string; data: { turnguard: unknown } };
        }
      }).finally(() => child.stdin!.end());
      expect(await exited).toBe(0);
      expect(text).toBe("");
      expect(failure).toMatchObject({
        code: -32603,
        message: CAUSE,
        data: { turnguard: { status: "failed", category: "rate_limit" } },
      });
    }
  });

  test("the SDK recipe beside a release's examples/: the SDK installed as the doc says", async () => {
    // The doc's install command, and the SDK major the checkout (and these tests) use.
    expect(DOC).toContain(
      "`npm install @agentclientprotocol/sdk@2` in the directory that holds `examples/`",
    );
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(pkg.devDependencies["@agentclientprotocol/sdk"]).toStartWith("2.");
    // examples/ as a release tarball lays it out, in a directory of its own.
    const release = mkdtempSync(join(home, "release-"));
    for (const file of exampleFiles()) {
      mkdirSync(dirname(join(release, file)), { recursive: true });
      copyFileSync(join(ROOT, file), join(release, file));
      expect(statSync(join(release, file)).mode).toBe(statSync(join(ROOT, file)).mode);
    }
    const line = commandLines("node examples/clients/acp_client.mjs")[0];
    const run = () =>
      runProcess(["bash", "-c", line], { cwd: release, env: homeEnv(home, { PATH: path }) });
    const before = await run();
    expect(before.code).toBe(1);
    expect(before.stderr).toContain("Cannot find package '@agentclientprotocol/sdk'");
    // What `npm install @agentclientprotocol/sdk@2` there leaves (offline here: the checkout's).
    mkdirSync(join(release, "node_modules", "@agentclientprotocol"), { recursive: true });
    symlinkSync(
      join(ROOT, "node_modules", "@agentclientprotocol", "sdk"),
      join(release, "node_modules", "@agentclientprotocol", "sdk"),
    );
    const after = await run();
    expect([after.code, after.stdout]).toEqual([0, `${ANSWER}\n[stop: end_turn]\n`]);
  });
});
