/** `turnguard run`: the command-line shell around lib/run.ts. */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { failureLine } from "../emit.ts";
import { UsageError } from "../errors.ts";
import { loadRegistry, profileAnchors, selectProfile } from "../registry.ts";
import { runTurn } from "../run.ts";
import { envRecord, type OptionSpec, parseOptions, splitCommand } from "./args.ts";

/** The flags `turnguard run` accepts. */
export const RUN_OPTIONS = {
  agent: { type: "string" },
  config: { type: "string" },
  "outcome-json": { type: "boolean" },
  "outcome-file": { type: "string" },
  verbose: { type: "boolean", short: "v" },
} satisfies OptionSpec;

/** Runs `turnguard run ARGS` and returns the exit code. */
export async function runCommand(argv: string[]): Promise<number> {
  const { own, command } = splitCommand(argv, RUN_OPTIONS);
  const { values } = parseOptions("run", own, RUN_OPTIONS);
  if (command.length === 0) {
    throw new UsageError(
      "run: missing the agent command (turnguard run [OPTIONS] -- CMD [ARGS...])",
    );
  }
  const env = envRecord();
  const cwd = process.cwd();
  const registry = await loadRegistry({ configFlag: values.config, env, cwd });
  const profile = selectProfile(registry, values.agent, command[0]);
  const result = await runTurn({
    command: command[0],
    args: command.slice(1),
    profile,
    anchors: profileAnchors(registry.anchors, profile),
    env,
    captureStdout: values["outcome-json"] === true,
    stdout: process.stdout,
    stderr: process.stderr,
  });
  const { outcome } = result;
  if (values.verbose) {
    for (const d of outcome.diagnostics) process.stderr.write(`turnguard: ${d}\n`);
  }
  if (outcome.status === "failed" && outcome.error && (result.swallowed || result.stderrWasEmpty)) {
    process.stderr.write(failureLine(outcome.agent, outcome.error, outcome.retry) + "\n");
  }
  const json = JSON.stringify(outcome);
  if (values["outcome-file"]) writeFileSync(resolve(cwd, values["outcome-file"]), json + "\n");
  if (values["outcome-json"]) process.stdout.write(json + "\n");
  return result.exitCode;
}
