/**
 * `make release`: from one machine, the compiled binaries for every target, each in
 * `turnguard-<version>-<target>.tar.gz` with the README, LICENSE and the examples the docs
 * point at (`examples/`, the files git tracks), the npm package
 * (`turnguard-<version>.tgz`, whose bin is the single-file Node bundle), and SHA256SUMS.
 *
 * The version is package.json's; the commit is embedded in every build (`--version`).
 * bun fetches each target's runtime from the npm registry (`@oven/bun-<target>`) into its
 * own install cache the first time (`$BUN_INSTALL_CACHE_DIR`, default ~/.bun/install/cache),
 * not into the project.
 *
 * Usage: bun scripts/release.ts [--out DIR] [--targets linux-x64,darwin-arm64] [--no-npm]
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";

/** Release target → bun's compile target. */
export const TARGETS = {
  "linux-x64": "bun-linux-x64",
  "linux-arm64": "bun-linux-arm64",
  "linux-x64-musl": "bun-linux-x64-musl",
  "linux-arm64-musl": "bun-linux-arm64-musl",
  "darwin-x64": "bun-darwin-x64",
  "darwin-arm64": "bun-darwin-arm64",
} as const;
type Target = keyof typeof TARGETS;

const ROOT = resolve(import.meta.dirname ?? ".", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
/** Where the npm package's bin is built (package.json `bin`). */
export const NODE_BUNDLE = join("dist", "turnguard.mjs");

function run(cmd: string, args: string[], cwd = ROOT): string {
  return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
}

/** The commit being built: short hash, `-dirty` when the tree has changes. */
function buildCommit(): string {
  try {
    const hash = run("git", ["rev-parse", "--short=12", "HEAD"]).trim();
    const dirty = run("git", ["status", "--porcelain", "--untracked-files=no"]).trim() !== "";
    return dirty ? `${hash}-dirty` : hash;
  } catch {
    return "unknown";
  }
}

const define = (commit: string) => ["--define", `TURNGUARD_BUILD_COMMIT=${JSON.stringify(commit)}`];

/**
 * The files of `examples/` git tracks (not what a Docker build left there), the ones the
 * npm package ships too (package.json `files`).
 */
export function exampleFiles(): string[] {
  return run("git", ["ls-files", "examples"]).split("\n").filter(Boolean);
}

/** One target's tarball; returns its file name. */
function releaseTarget(target: Target, version: string, commit: string, out: string): string {
  const name = `turnguard-${version}-${target}`;
  const dir = join(out, name);
  mkdirSync(dir, { recursive: true });
  run(BUN, [
    "build",
    // The flags of `make build` (Makefile), for another target.
    "--compile",
    "--minify",
    "--bytecode",
    "--format=esm",
    "--splitting",
    "--compile-jit-policy=10",
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    `--target=${TARGETS[target]}`,
    ...define(commit),
    "main.ts",
    "--outfile",
    join(dir, "turnguard"),
  ]);
  for (const file of ["README.md", "LICENSE", ...exampleFiles()]) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(dir, file));
  }
  const tarball = `${name}.tar.gz`;
  run("tar", ["--owner=0", "--group=0", "--numeric-owner", "-czf", tarball, name], out);
  rmSync(dir, { recursive: true, force: true });
  return tarball;
}

/** The single-file Node bundle the npm package runs (`#!/usr/bin/env node`). */
export function buildNodeBundle(commit: string): void {
  const file = join(ROOT, NODE_BUNDLE);
  run(BUN, ["build", "--target=node", "--minify", ...define(commit), "main.ts", "--outfile", file]);
  const code = readFileSync(file, "utf8").replace(/^#!.*\n/, "");
  writeFileSync(file, `#!/usr/bin/env node\n${code}`);
  chmodSync(file, 0o755);
}

/** `npm pack` of the package into `out`; returns the tarball's name. */
function npmPackage(commit: string, out: string): string {
  buildNodeBundle(commit);
  const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", out]));
  return packed[0].filename;
}

function sha256sums(out: string, files: string[]): void {
  const lines = files.sort().map((f) =>
    `${createHash("sha256").update(readFileSync(join(out, f))).digest("hex")}  ${f}\n`
  );
  writeFileSync(join(out, "SHA256SUMS"), lines.join(""));
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      out: { type: "string", default: join(ROOT, "dist", "release") },
      targets: { type: "string", default: Object.keys(TARGETS).join(",") },
      "no-npm": { type: "boolean" },
    },
  });
  const targets = values.targets.split(",").filter(Boolean);
  for (const t of targets) {
    if (!(t in TARGETS)) {
      console.error(`release: unknown target "${t}" (known: ${Object.keys(TARGETS).join(", ")})`);
      process.exit(2);
    }
  }
  const out = resolve(values.out);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  const commit = buildCommit();
  const files = targets.map((t) => {
    console.error(`release: ${t}`);
    return releaseTarget(t as Target, version, commit, out);
  });
  if (!values["no-npm"]) files.push(npmPackage(commit, out));
  sha256sums(out, files);
  console.error(`release: turnguard ${version} (${commit}) in ${out}:`);
  for (const f of readdirSync(out).sort()) console.error(`  ${f}`);
}
