/**
 * .github/workflows/release.yml, as far as it runs off GitHub: its trigger, permissions and
 * steps read from the file, and the shell of its own steps run by bash with the variables
 * GitHub sets and stand-ins for `gh` and `npm` on PATH that record what they were asked.
 * (actionlint checks the file as a whole in `make lint`.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers/cli.ts";
import { TARGETS } from "../../scripts/release.ts";

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
}
interface Workflow {
  on: { push: { tags: string[] } };
  permissions: Record<string, string>;
  jobs: { release: { steps: Step[] } };
}

const WORKFLOW = Bun.YAML.parse(
  readFileSync(join(ROOT, ".github/workflows/release.yml"), "utf8"),
) as Workflow;
const STEPS = WORKFLOW.jobs.release.steps;
const PKG = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
const VERSION: string = PKG.version;

/** The step whose `run` holds `text`. */
const stepRunning = (text: string) => STEPS.find((s) => s.run?.includes(text))!;

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tg-workflow-"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs a step's shell as GitHub does (bash -e), in `cwd`, with `env` and a bin dir first. */
function runStep(step: Step, cwd: string, env: Record<string, string>, bin?: string) {
  return spawnSync("bash", ["--noprofile", "--norc", "-eo", "pipefail", "-c", step.run!], {
    cwd,
    encoding: "utf8",
    env: { PATH: [bin, process.env.PATH].filter(Boolean).join(":"), ...env },
  });
}

/** A stand-in command that appends its arguments to `log`, exiting `code` for `when`. */
function recorder(bin: string, name: string, log: string, fail = "") {
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    join(bin, name),
    `#!/bin/sh\necho "${name} $*" >> ${log}\ncase "$*" in ${fail || "-"}) exit 1 ;; esac\n`,
    { mode: 0o755 },
  );
}

describe("the release workflow", () => {
  test("a version tag starts it; it may write the release and sign provenance", () => {
    expect(WORKFLOW.on).toEqual({ push: { tags: ["v*"] } });
    expect(WORKFLOW.permissions).toEqual({ contents: "write", "id-token": "write" });
  });

  test("checkout, Node at the package's floor, lint and test, release, attach, publish", () => {
    expect(STEPS[0].uses).toStartWith("actions/checkout@");
    expect(STEPS[1].uses).toStartWith("actions/setup-node@");
    // The major of engines' floor, so the release's npm test runs under it.
    expect(STEPS[1].with?.["node-version"]).toBe(PKG.engines.node.match(/\d+/)[0]);
    const order = ["bash .ci/run", "make release", "gh release", "npm publish"].map((t) =>
      STEPS.indexOf(stepRunning(t))
    );
    expect(order.every((i, k) => i > 1 && (k === 0 || i > order[k - 1]))).toBe(true);
  });

  test("the tag must be v + package.json's version, and package.json name the repository", () => {
    const check = stepRunning("GITHUB_REF_NAME");
    const repo = PKG.repository.url.match(/github\.com\/(.+)\.git$/)[1];
    const ok = runStep(check, ROOT, { GITHUB_REF_NAME: `v${VERSION}`, GITHUB_REPOSITORY: repo });
    expect([ok.status, ok.stdout]).toEqual([0, ""]);
    const tag = runStep(check, ROOT, { GITHUB_REF_NAME: "v9.9.9", GITHUB_REPOSITORY: repo });
    expect([tag.status, tag.stdout]).toEqual([
      1,
      `::error::tag v9.9.9 is not v${VERSION} (package.json)\n`,
    ]);
    const fork = runStep(check, ROOT, {
      GITHUB_REF_NAME: `v${VERSION}`,
      GITHUB_REPOSITORY: "someone/fork",
    });
    expect(fork.status).toBe(1);
    expect(fork.stdout).toContain("is not github.com/someone/fork");
  });

  test("attaches the six tarballs, the npm package, SHA256SUMS and install.sh; publishes with provenance", () => {
    const cwd = join(work, "checkout");
    mkdirSync(join(cwd, "dist", "release"), { recursive: true });
    mkdirSync(join(cwd, "scripts"));
    writeFileSync(join(cwd, "scripts", "install.sh"), "#!/bin/sh\n");
    const files = [
      ...Object.keys(TARGETS).map((t) => `turnguard-${VERSION}-${t}.tar.gz`),
      `turnguard-${VERSION}.tgz`,
      "SHA256SUMS",
    ];
    for (const f of files) writeFileSync(join(cwd, "dist", "release", f), "x");
    const log = join(work, "calls.log");
    const bin = join(work, "bin");
    // No release for the tag yet: `gh release view` fails, so it is created.
    recorder(bin, "gh", log, '"release view"*');
    recorder(bin, "npm", log);
    const env = { GITHUB_REF_NAME: `v${VERSION}`, GH_TOKEN: "t", NODE_AUTH_TOKEN: "t" };
    const attach = runStep(stepRunning("gh release"), cwd, env, bin);
    expect(attach.status).toBe(0);
    const publish = runStep(stepRunning("npm publish"), cwd, env, bin);
    expect(publish.status).toBe(0);
    const calls = readFileSync(log, "utf8").trim().split("\n");
    expect(calls[0]).toBe(`gh release view v${VERSION}`);
    const created = calls[1].split(" ");
    expect(created.slice(0, 4)).toEqual(["gh", "release", "create", `v${VERSION}`]);
    expect(created.filter((a) => a.startsWith("dist/") || a.startsWith("scripts/")).sort())
      .toEqual([...files.map((f) => `dist/release/${f}`), "scripts/install.sh"].sort());
    expect(calls[2]).toBe(
      `npm publish --provenance --access public dist/release/turnguard-${VERSION}.tgz`,
    );

    // A target's tarball missing: nothing is attached.
    rmSync(join(cwd, "dist", "release", files[0]));
    rmSync(log);
    const missing = runStep(stepRunning("gh release"), cwd, env, bin);
    expect(missing.status).toBe(1);
    expect(missing.stdout).toStartWith("::error::expected six tarballs");
    expect(existsSync(log)).toBe(false);
  });
});
