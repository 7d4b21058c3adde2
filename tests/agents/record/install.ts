/**
 * Installs the pinned real agents of the corpus from the npm registry into the cache outside
 * the repository (`$XDG_CACHE_HOME/turnguard-corpus/NAME-VERSION`, default ~/.cache). Each agent
 * gets its own directory, so their dependency trees never mix. Already installed: skipped.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AGENTS, installDir } from "./agents.ts";

// `--agent NAME`... narrows it (`make corpus-install AGENTS=...`).
const only = process.argv.slice(2).flatMap((a, i, all) => (all[i - 1] === "--agent" ? [a] : []));
for (const agent of AGENTS) {
  if (only.length && !only.includes(agent.name)) continue;
  const dir = installDir(agent);
  if (existsSync(join(dir, "node_modules", ".bin", agent.bin))) {
    console.log(`${agent.name}@${agent.version}: installed in ${dir}`);
    continue;
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true }) + "\n");
  console.log(`${agent.name}@${agent.version}: npm install ${agent.pkg}@${agent.version}`);
  const r = spawnSync("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    `${agent.pkg}@${agent.version}`,
    ...(agent.with ?? []),
  ], {
    cwd: dir,
    stdio: "inherit",
  });
  if (r.status !== 0) {
    console.error(`${agent.name}: npm install failed (exit ${r.status}) in ${dir}`);
    process.exit(1);
  }
}
