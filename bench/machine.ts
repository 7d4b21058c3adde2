/** The machine a benchmark ran on, as `nproc`, `uname -m` and /proc/cpuinfo tell it. */
import { readFileSync } from "node:fs";
import { arch, cpus } from "node:os";
import { bun } from "../lib/io/bun_api.ts";

/** `nproc N, ARCH, CPU MODEL; bun VERSION`. */
export function machine(): string {
  let model = "unknown";
  try {
    model = readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? model;
  } catch { /* not Linux */ }
  const machineArch = arch() === "x64" ? "x86_64" : arch();
  return `nproc ${cpus().length}, ${machineArch}, ${model}; bun ${bun?.version ?? "?"}`;
}
