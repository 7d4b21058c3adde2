/**
 * `make release` (scripts/release.ts), for what can be run here: the linux-x64 tarball's
 * binary under `env -i` in an empty directory, the linux-arm64 one under qemu-user when it
 * is installed, SHA256SUMS, and the npm package installed from its tarball into a prefix
 * offline, with an empty cache and nothing on stderr (no dependency to fetch, no engine
 * warning under this Node), and run under Node: `run`, `proxy`, and `scan` with a `.js`
 * plugin.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, ROOT } from "../helpers/cli.ts";

// Compiling, packing and installing on a shared 2-core machine.
setDefaultTimeout(240_000);

const { version } = JSON.parse(
  spawnSync("cat", [join(ROOT, "package.json")], { encoding: "utf8" }).stdout,
);
const QEMU = spawnSync("qemu-aarch64", ["--version"]).status === 0 &&
  existsSync("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1");
/** The files of examples/ git tracks: what the docs tell users to find in a release. */
const EXAMPLES = spawnSync("git", ["ls-files", "examples"], { cwd: ROOT, encoding: "utf8" })
  .stdout.trim().split("\n");
const COMMIT = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], {
  cwd: ROOT,
  encoding: "utf8",
})
  .stdout.trim();

let out: string;
let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tg-release-"));
  out = join(work, "release");
  const targets = QEMU ? "linux-x64,linux-arm64" : "linux-x64";
  if (!QEMU) {
    console.warn(
      "release.test: qemu-aarch64 (and /usr/aarch64-linux-gnu) not found: " +
        "the linux-arm64 binary is not run (apt-get install qemu-user libc6-arm64-cross)",
    );
  }
  const r = spawnSync(BUN, [join(ROOT, "scripts/release.ts"), "--out", out, "--targets", targets], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`release failed:\n${r.stderr}`);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const run = (
  argv: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
) => spawnSync(argv[0], argv.slice(1), { encoding: "utf8", ...opts });

function unpack(target: string): string {
  const dir = join(work, `unpacked-${target}`);
  mkdirSync(dir, { recursive: true });
  expect(run(["tar", "xzf", join(out, `turnguard-${version}-${target}.tar.gz`), "-C", dir]).status)
    .toBe(0);
  return join(dir, `turnguard-${version}-${target}`);
}

describe("make release", () => {
  test("tarballs with the binary, README, LICENSE and examples; SHA256SUMS checks out", () => {
    const files = readdirSync(out).sort();
    expect(files).toContain(`turnguard-${version}-linux-x64.tar.gz`);
    expect(files).toContain(`turnguard-${version}.tgz`);
    expect(files).toContain("SHA256SUMS");
    const listed = run(["tar", "tzf", join(out, `turnguard-${version}-linux-x64.tar.gz`)]).stdout
      .trim().split("\n").sort();
    const top = `turnguard-${version}-linux-x64`;
    expect(listed.filter((f) => !f.endsWith("/"))).toEqual(
      [
        `${top}/LICENSE`,
        `${top}/README.md`,
        `${top}/turnguard`,
        ...EXAMPLES.map((f) => `${top}/${f}`),
      ]
        .sort(),
    );
    expect(EXAMPLES).toContain("examples/clients/acp_client.mjs");
    // The fake agent keeps its execute bit.
    const modes = run(["tar", "tvzf", join(out, `${top}.tar.gz`), `${top}/examples/agents/agy`]);
    expect(modes.stdout).toStartWith("-rwx");
    const sums = run(["sha256sum", "-c", "SHA256SUMS"], { cwd: out });
    expect(sums.status).toBe(0);
    expect(sums.stdout.trim().split("\n").length).toBe(files.length - 1);
  });

  test("linux-x64: runs under env -i in an empty directory; --version has the commit", () => {
    const bin = join(unpack("linux-x64"), "turnguard");
    const empty = mkdtempSync(join(work, "empty-"));
    const v = run(["env", "-i", bin, "--version"], { cwd: empty });
    expect(v.stdout).toMatch(new RegExp(`^turnguard ${version} \\(${COMMIT}(-dirty)?\\)\\n$`));
    const r = run(["env", "-i", bin, "run", "--", "/bin/sh", "-c", "echo hi"], { cwd: empty });
    expect([r.status, r.stdout, r.stderr]).toEqual([0, "hi\n", ""]);
    expect(run(["env", "-i", bin, "proxy", "--help"], { cwd: empty }).status).toBe(0);
    expect(readdirSync(empty)).toEqual([]);
  });

  test("scripts/install.sh installs the linux-x64 binary from the release directory", () => {
    if (process.arch !== "x64") return;
    const dir = join(work, "installed-bin");
    const r = run(["sh", join(ROOT, "scripts", "install.sh"), version], {
      env: {
        PATH: process.env.PATH,
        HOME: work,
        TURNGUARD_DOWNLOAD_BASE: `file://${out}`,
        TURNGUARD_INSTALL_DIR: dir,
      },
    });
    expect(r.status).toBe(0);
    const v = run([join(dir, "turnguard"), "--version"]);
    expect(v.stdout).toMatch(new RegExp(`^turnguard ${version} \\(${COMMIT}(-dirty)?\\)\\n$`));
  });

  test("linux-arm64 under qemu-user", () => {
    if (!QEMU) {
      console.warn("release.test: skipped linux-arm64 under qemu-user (not installed)");
      return;
    }
    const bin = join(unpack("linux-arm64"), "turnguard");
    const v = run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", bin, "--version"]);
    expect(v.stdout).toMatch(new RegExp(`^turnguard ${version} \\(`));
  });
});

describe("the npm package", () => {
  let bin: string;
  let home: string;
  let installed: ReturnType<typeof run>;
  let pkgDir: string;
  beforeAll(() => {
    const prefix = join(work, "prefix");
    home = join(work, "home");
    mkdirSync(home);
    const tgz = join(out, `turnguard-${version}.tgz`);
    const cache = join(work, "empty-npm-cache");
    mkdirSync(cache);
    // Offline with an empty cache: any dependency to fetch fails the install; npm's own
    // warnings (EBADENGINE for a dependency wanting a newer Node) would reach stderr.
    installed = run(
      [
        "npm",
        "install",
        "--global",
        "--prefix",
        prefix,
        "--offline",
        "--no-audit",
        "--no-fund",
        tgz,
      ],
      { env: { ...process.env, npm_config_cache: cache, npm_config_loglevel: "warn" } },
    );
    bin = join(prefix, "bin", "turnguard");
    pkgDir = join(prefix, "lib", "node_modules", "turnguard");
  });

  test("installs offline with an empty cache, nothing on stderr, under this Node", () => {
    expect({ status: installed.status, stderr: installed.stderr }).toEqual({
      status: 0,
      stderr: "",
    });
    const pkg = JSON.parse(
      run(["tar", "xzOf", join(out, `turnguard-${version}.tgz`), "package/package.json"]).stdout,
    );
    expect(pkg.dependencies ?? {}).toEqual({});
    // The bundle's floor: process.getBuiltinModule (Node 20.16, 22.3); the Node running this
    // test must meet the stated floor for the test to say anything about it.
    expect(pkg.engines.node).toBe(">=20.16");
    const [major, minor] = process.versions.node.split(".").map(Number);
    expect(major > 20 || (major === 20 && minor >= 16)).toBe(true);
  });

  test("below the stated floor, without process.getBuiltinModule, it fails", () => {
    const r = run([
      "node",
      "--import",
      "data:text/javascript,delete process.getBuiltinModule",
      bin,
      "run",
      "--outcome-json",
      "--",
      "true",
    ], { cwd: home });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("getBuiltinModule");
  });
  const node = (args: string[], input?: string) =>
    run([bin, ...args], {
      cwd: home,
      input,
      env: { PATH: process.env.PATH, HOME: home },
    });

  test("holds the Node bundle, README, LICENSE, examples and package.json only; not private", () => {
    const list = run(["tar", "tzf", join(out, `turnguard-${version}.tgz`)]).stdout.trim()
      .split("\n").sort();
    expect(list).toEqual(
      [
        "package/LICENSE",
        "package/README.md",
        "package/dist/turnguard.mjs",
        "package/package.json",
        // npm never packs a .gitignore.
        ...EXAMPLES.filter((f) => !f.endsWith("/.gitignore")).map((f) => `package/${f}`),
      ].sort(),
    );
    const pkg = JSON.parse(
      run(["tar", "xzOf", join(out, `turnguard-${version}.tgz`), "package/package.json"]).stdout,
    );
    expect(pkg.private).toBeUndefined();
    expect(pkg.engines.node).toBeDefined();
    expect(pkg.bin.turnguard).toBe("dist/turnguard.mjs");
  });

  test("run, under Node", () => {
    const v = node(["--version"]);
    expect(v.stdout).toStartWith(`turnguard ${version} (`);
    const r = node(["run", "--outcome-json", "--", "sh", "-c", "echo hi"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).reply.chars).toBe(3);
  });

  test("proxy, under Node: a turn of the example agent the package ships", () => {
    const lines = [
      { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } },
      { jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: home, mcpServers: [] } },
    ].map((m) => JSON.stringify(m)).join("\n") + "\n";
    const r = node(
      ["proxy", "--", "node", join(pkgDir, "examples/agents/acp_agent.mjs"), "answer"],
      lines,
    );
    expect(r.status).toBe(0);
    const answers = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(answers.map((a) => a.id)).toEqual([0, 1]);
    expect(answers[1].result.sessionId).toStartWith("example-");
  });

  test("scan with a .js plugin, under Node", () => {
    writeFileSync(
      join(home, "mine.js"),
      `export default { anchors: [{ id: "mine.budget", on: ["log"],
  match: (i) => i.line.includes("budget gone") ? { cause: "budget gone", category: "quota" } : null }] };\n`,
    );
    writeFileSync(join(home, "turnguard.toml"), 'plugins = ["mine.js"]\n');
    writeFileSync(join(home, "agent.log"), "starting\nbudget gone for team=a\n");
    const r = node(["scan", "--config", join(home, "turnguard.toml"), join(home, "agent.log")]);
    expect(r.stdout).toContain("mine.budget [quota;");
    expect(r.status).toBe(0);
  });
});
