/**
 * The benchmarks' smoke run (bench/goals.ts --quick --smoke): small sizes and generous
 * bounds against floors measured in the same run, so only a large regression in start-up,
 * proxy CPU or proxy memory fails, whatever the machine's load. `make bench` has the real
 * figures.
 */
import { describe, expect, test } from "bun:test";
import { ensureBinary } from "./helpers/binary.ts";
import { BUN, ROOT, runProcess } from "./helpers/cli.ts";

describe("benchmark smoke run", () => {
  test("every goal within its smoke bound of its floor", async () => {
    ensureBinary();
    const r = await runProcess([BUN, "bench/goals.ts", "--quick", "--smoke"], { cwd: ROOT });
    if (r.code !== 0) console.error(r.stdout + r.stderr);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("| `run -- true`, CPU |");
    expect(r.stdout).toContain("| proxy, small lines in a turn, CPU per 100 MiB |");
  }, 300_000);
});
