/**
 * scripts/install.sh, the one-line installer, run by the system's POSIX sh against release
 * directories this test lays out: every target's tarball holding a small stand-in binary
 * that names its target, and a SHA256SUMS computed here. Served from a file:// URL and from
 * a loopback HTTP server; the platform is the machine's own, or a stand-in `uname`/`ldd`
 * put first on PATH (the script's only ways of looking).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers/cli.ts";
import { TARGETS } from "../../scripts/release.ts";

setDefaultTimeout(30_000);

const SCRIPT = join(ROOT, "scripts", "install.sh");
let work: string;

/** One release's files: a tarball per target with a stand-in binary, and SHA256SUMS. */
function layRelease(dir: string, versions: string[]): void {
  mkdirSync(dir, { recursive: true });
  const sums: string[] = [];
  for (const version of versions) {
    for (const target of Object.keys(TARGETS)) {
      const name = `turnguard-${version}-${target}`;
      mkdirSync(join(dir, name));
      writeFileSync(
        join(dir, name, "turnguard"),
        `#!/bin/sh\necho "turnguard ${version} (${target})"\n`,
        { mode: 0o755 },
      );
      writeFileSync(join(dir, name, "README.md"), "readme\n");
      const tar = spawnSync("tar", ["-czf", `${name}.tar.gz`, name], { cwd: dir });
      expect(tar.status).toBe(0);
      rmSync(join(dir, name), { recursive: true });
      const hash = createHash("sha256").update(readFileSync(join(dir, `${name}.tar.gz`)));
      sums.push(`${hash.digest("hex")}  ${name}.tar.gz\n`);
    }
  }
  writeFileSync(join(dir, "SHA256SUMS"), sums.sort().join(""));
}

/** A directory of stand-in commands, put first on PATH. */
function fakeTools(name: string, tools: Record<string, string>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [tool, body] of Object.entries(tools)) {
    writeFileSync(join(dir, tool), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }
  return dir;
}

interface Installed {
  code: number;
  stderr: string;
  dir: string;
}

/** Runs the installer as `curl … | sh -s -- ARGS` would: the script on sh's stdin. */
async function install(
  base: string,
  args: string[] = [],
  opts: { path?: string } = {},
): Promise<Installed> {
  const dir = mkdtempSync(join(work, "bin-"));
  const child = Bun.spawn(["sh", "-s", "--", ...args], {
    stdin: Bun.file(SCRIPT),
    stdout: "pipe",
    stderr: "pipe",
    cwd: work,
    env: {
      PATH: [opts.path, process.env.PATH].filter(Boolean).join(":"),
      HOME: join(work, "home"),
      TURNGUARD_DOWNLOAD_BASE: base,
      TURNGUARD_INSTALL_DIR: dir,
    },
  });
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return { code, stderr, dir };
}

/** What the installed binary says, or null when nothing was installed. */
function installedVersion(dir: string): string | null {
  const bin = join(dir, "turnguard");
  if (!existsSync(bin)) return null;
  return spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout.trim();
}

/** This machine's target as the script should find it (these tests run on glibc Linux). */
const HOST = `linux-${process.arch === "arm64" ? "arm64" : "x64"}`;

let release: string;
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tg-install-"));
  release = join(work, "release");
  layRelease(release, ["0.9.0", "1.2.3"]);
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const file = join(release, new URL(req.url).pathname.split("/").pop() ?? "");
      return existsSync(file)
        ? new Response(readFileSync(file))
        : new Response("not found", { status: 404 });
    },
  });
});
afterAll(() => {
  server.stop(true);
  rmSync(work, { recursive: true, force: true });
});

describe("scripts/install.sh", () => {
  test("is a POSIX sh script (sh -n) and clean under shellcheck when installed", () => {
    expect(spawnSync("sh", ["-n", SCRIPT]).status).toBe(0);
    if (spawnSync("shellcheck", ["--version"]).status !== 0) {
      console.warn("install_script.test: shellcheck not installed (apt-get install shellcheck)");
      return;
    }
    const r = spawnSync("shellcheck", ["--shell=sh", SCRIPT], { encoding: "utf8" });
    expect(r.stdout).toBe("");
  });

  test("file:// base, a version: this machine's target, checked and installed", async () => {
    const r = await install(`file://${release}`, ["1.2.3"]);
    expect({ code: r.code, version: installedVersion(r.dir) }).toEqual({
      code: 0,
      version: `turnguard 1.2.3 (${HOST})`,
    });
    expect(r.stderr).toContain(`installed turnguard 1.2.3 (${HOST}) as ${r.dir}/turnguard\n`);
    // The install dir is not on PATH here, and the script says so.
    expect(r.stderr).toContain(`${r.dir} is not on your PATH`);
  });

  test("a v-prefixed version is the same version", async () => {
    const r = await install(`file://${release}`, ["v0.9.0"]);
    expect(installedVersion(r.dir)).toBe(`turnguard 0.9.0 (${HOST})`);
  });

  test("over HTTP from a loopback server, no version: the release the base holds", async () => {
    const only = join(work, "only");
    layRelease(only, ["2.0.0"]);
    const single = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) =>
        new Response(readFileSync(join(only, new URL(req.url).pathname.split("/").pop()!))),
    });
    try {
      const r = await install(`http://127.0.0.1:${single.port}/v2.0.0/`);
      expect([r.code, installedVersion(r.dir)]).toEqual([0, `turnguard 2.0.0 (${HOST})`]);
      expect(r.stderr).toContain(`downloading http://127.0.0.1:${single.port}/v2.0.0/turnguard-`);
    } finally {
      single.stop(true);
    }
  });

  test("a tarball that does not match SHA256SUMS: one clear line, exit 5, nothing installed", async () => {
    const bad = join(work, "corrupt");
    layRelease(bad, ["1.2.3"]);
    const tarball = join(bad, `turnguard-1.2.3-${HOST}.tar.gz`);
    const bytes = readFileSync(tarball);
    bytes[bytes.length - 1] ^= 0xff;
    writeFileSync(tarball, bytes);
    const actual = createHash("sha256").update(bytes).digest("hex");
    const r = await install(`file://${bad}`, ["1.2.3"]);
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(
      new RegExp(
        `^turnguard install: downloading .*\\nturnguard install: checksum mismatch for ` +
          `turnguard-1\\.2\\.3-${HOST}\\.tar\\.gz: SHA256SUMS says [0-9a-f]{64}, the download is ` +
          `${actual}\\n$`,
      ),
    );
    expect(installedVersion(r.dir)).toBeNull();
  });

  test("an architecture with no build: exit 3 naming it, nothing downloaded", async () => {
    const tools = fakeTools("riscv", {
      uname: 'case "$1" in -s) echo Linux ;; -m) echo riscv64 ;; esac',
    });
    const r = await install(`file://${join(work, "nowhere")}`, [], { path: tools });
    expect([r.code, r.stderr]).toEqual([
      3,
      'turnguard install: no build for the architecture "riscv64" (builds: x86_64 and arm64)\n',
    ]);
    const os = fakeTools("freebsd", {
      uname: 'case "$1" in -s) echo FreeBSD ;; -m) echo amd64 ;; esac',
    });
    const o = await install(`file://${release}`, [], { path: os });
    expect([o.code, o.stderr]).toEqual([
      3,
      'turnguard install: no build for the OS "FreeBSD" (builds: Linux and macOS)\n',
    ]);
  });

  test("musl (ldd says so): the -musl build; macOS arm64: the darwin-arm64 build", async () => {
    const musl = fakeTools("musl", {
      uname: 'case "$1" in -s) echo Linux ;; -m) echo aarch64 ;; esac',
      ldd: 'echo "musl libc (aarch64)"; echo "Version 1.2.4"; exit 1',
    });
    const m = await install(`file://${release}`, ["1.2.3"], { path: musl });
    expect([m.code, installedVersion(m.dir)]).toEqual([0, "turnguard 1.2.3 (linux-arm64-musl)"]);
    const mac = fakeTools("mac", {
      uname: 'case "$1" in -s) echo Darwin ;; -m) echo arm64 ;; esac',
    });
    const d = await install(`file://${release}`, ["1.2.3"], { path: mac });
    expect([d.code, installedVersion(d.dir)]).toEqual([0, "turnguard 1.2.3 (darwin-arm64)"]);
  });

  test("a version the release does not hold, a bad version, a missing base", async () => {
    const missing = await install(`file://${release}`, ["3.0.0"]);
    expect([missing.code, missing.stderr]).toEqual([
      5,
      `turnguard install: file://${release}/SHA256SUMS lists no turnguard-3.0.0-${HOST}.tar.gz\n`,
    ]);
    const bad = await install(`file://${release}`, ["latest;rm"]);
    expect([bad.code, bad.stderr]).toEqual([
      2,
      'turnguard install: "latest;rm" is not a version (e.g. 0.1.0 or v0.1.0)\n',
    ]);
    const gone = await install(`file://${join(work, "nowhere")}`);
    expect(gone.code).toBe(4);
    expect(gone.stderr).toEndWith(
      `turnguard install: could not download file://${join(work, "nowhere")}/SHA256SUMS\n`,
    );
  });

  test("an existing turnguard in the install dir is replaced", async () => {
    const first = await install(`file://${release}`, ["0.9.0"]);
    const dir = first.dir;
    chmodSync(join(dir, "turnguard"), 0o500);
    const again = Bun.spawn(["sh", SCRIPT, "1.2.3"], {
      stderr: "pipe",
      env: {
        PATH: process.env.PATH,
        HOME: work,
        TURNGUARD_DOWNLOAD_BASE: `file://${release}`,
        TURNGUARD_INSTALL_DIR: dir,
      },
    });
    expect(await again.exited).toBe(0);
    expect(installedVersion(dir)).toBe(`turnguard 1.2.3 (${HOST})`);
  });
});
