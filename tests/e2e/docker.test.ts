/**
 * examples/docker: the images are built only where a container engine runs (skipped with a
 * message otherwise), but their entry point is run here as the engine would run it:
 * ENTRYPOINT + CMD, the image's ENV, the journal in the declared volume, `turnguard wait`
 * reading it afterwards, and every COPY source where the README's steps put it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { ROOT } from "../helpers/cli.ts";

setDefaultTimeout(120_000);

const DIR = join(ROOT, "examples", "docker");

/** The instructions of a Dockerfile that the entry point depends on. */
function readDockerfile(text: string) {
  const lines = text.split("\n").filter((l) => l.trim() && !l.trimStart().startsWith("#"));
  const json = (keyword: string) =>
    lines.filter((l) => l.startsWith(`${keyword} `)).map((l) =>
      JSON.parse(l.slice(keyword.length + 1)) as string[]
    );
  const env: Record<string, string> = {};
  for (const l of lines.filter((l) => l.startsWith("ENV "))) {
    const [k, v] = l.slice(4).split("=");
    env[k] = v;
  }
  return {
    from: lines.find((l) => l.startsWith("FROM "))!.slice(5),
    copies: lines.filter((l) => l.startsWith("COPY ")).map((l) => l.slice(5).split(/\s+/)),
    entrypoint: json("ENTRYPOINT").at(-1)!,
    cmd: json("CMD").at(-1)!,
    volumes: json("VOLUME").flat(),
    env,
    runs: lines.filter((l) => l.startsWith("RUN ")).map((l) => l.slice(4)),
    user: lines.filter((l) => l.startsWith("USER ")).map((l) => l.slice(5).trim()).at(-1),
  };
}

let work: string;
let binary: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tg-docker-"));
  binary = ensureBinary();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const ENGINE = spawnSync("docker", ["info"], { stdio: "ignore" }).status === 0;

for (const file of ["Dockerfile", "Dockerfile.alpine"]) {
  describe(`examples/docker/${file}`, () => {
    const image = readDockerfile(readFileSync(join(DIR, file), "utf8"));

    test("proxy entry point, the journal in a volume; alpine adds musl's two libraries", () => {
      expect(image.entrypoint).toEqual(["turnguard", "proxy", "--"]);
      expect(image.volumes).toEqual([dirname(image.env.TURNGUARD_JOURNAL)]);
      expect(image.copies).toContainEqual(["turnguard", "/usr/local/bin/turnguard"]);
      if (file.endsWith(".alpine")) {
        expect(image.from).toContain("alpine");
        expect(image.runs).toContain("apk add --no-cache libstdc++ libgcc");
      }
      // Every COPY source is a file the README's steps put in the build context.
      for (const [source] of image.copies) {
        expect(["turnguard", "acp_agent.mjs"]).toContain(source);
      }
      expect(existsSync(join(ROOT, "examples", "agents", "acp_agent.mjs"))).toBe(true);
    });

    test("not root: the base image's node user runs it and owns the journal's volume", () => {
      expect(image.user).toBe("node");
      const volume = dirname(image.env.TURNGUARD_JOURNAL);
      expect(image.runs).toContain(`mkdir -p ${volume} && chown node:node ${volume}`);
      // The base images (node:22-*) have that user: uid 1000.
      expect(image.from).toMatch(/^node:22-/);
    });

    test("ENTRYPOINT + CMD run as the engine runs them; wait reads the volume's journal", () => {
      // The image's paths, mapped into a scratch directory.
      const volume = join(work, file, "volume");
      const journal = join(volume, "journal.jsonl");
      const map = (arg: string) =>
        arg === "turnguard"
          ? binary
          : arg === "/opt/agent/acp_agent.mjs"
          ? join(ROOT, "examples", "agents", "acp_agent.mjs")
          : arg;
      const argv = [...image.entrypoint, ...image.cmd].map(map);
      const env = {
        PATH: process.env.PATH!,
        HOME: join(work, file),
        TURNGUARD_JOURNAL: join(volume, basename(image.env.TURNGUARD_JOURNAL)),
      };
      const input = [
        { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } },
        { jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/", mcpServers: [] } },
      ].map((m) => JSON.stringify(m) + "\n").join("");
      const session = spawnSync(argv[0], argv.slice(1), { env, input, encoding: "utf8" });
      expect(session.status).toBe(0);
      const sessionId = JSON.parse(session.stdout.trim().split("\n")[1]).result.sessionId;
      const prompt = {
        jsonrpc: "2.0",
        id: 2,
        method: "session/prompt",
        params: { sessionId, prompt: [{ type: "text", text: "hi" }] },
      };
      const r = spawnSync(argv[0], argv.slice(1), {
        env,
        input: input + JSON.stringify(prompt) + "\n",
        encoding: "utf8",
      });
      expect(r.status).toBe(0);
      expect(r.stdout).toContain('"stopReason":"end_turn"');
      expect(existsSync(journal)).toBe(true);
      const wait = spawnSync(binary, ["wait", "--print"], { env, encoding: "utf8" });
      expect([wait.status, wait.stdout]).toEqual([0, "Hello from the example agent.\n"]);
    });

    test("docker build, where a container engine runs", () => {
      if (!ENGINE) {
        console.warn(
          `docker.test: no container engine running (docker info failed): ${file} not built`,
        );
        return;
      }
      const context = mkdtempSync(join(work, "context-"));
      spawnSync("cp", [
        join(DIR, file),
        binary,
        join(ROOT, "examples/agents/acp_agent.mjs"),
        context,
      ]);
      const r = spawnSync("docker", ["build", "-q", "-f", join(context, file), context], {
        encoding: "utf8",
      });
      expect(r.status).toBe(0);
    });
  });
}
