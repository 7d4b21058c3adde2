/**
 * `turnguard check [--config PATH] [--json]`: validates the configuration and loads every
 * plugin exactly as `run` and `proxy` would, then prints what is active per agent profile.
 * Exit 0 when all is well; 2 with the first error (file, line, key) otherwise.
 */
import type { Profile } from "../config.ts";
import type { LoadedAnchor } from "../plugin.ts";
import { loadRegistry, profileAnchors, type Registry } from "../registry.ts";
import { envRecord, parseOptions } from "./args.ts";

/** The profile unknown commands get: no logs, every anchor not tied to an agent. */
const OTHER: Profile = {
  name: "(other commands)",
  match: [],
  logs: [],
  logFormat: "plain",
  anchors: null,
};

function describeAnchor(a: LoadedAnchor) {
  return { id: a.id, priority: a.priority, on: a.on, origin: a.origin ?? null };
}

/** What `check --json` prints. */
export function checkReport(registry: Registry) {
  const profiles = [...registry.profiles.values(), OTHER].map((p) => ({
    name: p.name,
    match: p.match,
    logs: p.logs,
    logFormat: p.logFormat,
    anchors: profileAnchors(registry.anchors, p).map(describeAnchor),
  }));
  return {
    files: registry.files,
    plugins: registry.pluginFiles,
    pluginBudgetMs: registry.pluginBudgetMs,
    profiles,
    detectors: registry.detectors.map((d) => ({ id: d.id, origin: d.origin ?? null })),
  };
}

/** The report as text. */
export function formatCheck(report: ReturnType<typeof checkReport>): string {
  const out = [`config: ${report.files.join(", ")}`];
  out.push(
    report.plugins.length > 0
      ? `code plugins (${report.pluginBudgetMs} ms per plugin per turn): ${
        report.plugins.join(", ")
      }`
      : "code plugins: none",
  );
  for (const p of report.profiles) {
    const match = p.match.length > 0 ? ` — matches ${p.match.join(", ")}` : "";
    out.push(`profile ${p.name}${match}`);
    if (p.logs.length > 0) out.push(`  logs (${p.logFormat}): ${p.logs.join(", ")}`);
    out.push(`  anchors (${p.anchors.length}):`);
    for (const a of [...p.anchors].sort((x, y) => y.priority - x.priority)) {
      out.push(
        `    ${a.id}  priority ${a.priority}  on ${a.on.join(",")}  ${a.origin ?? ""}`.trimEnd(),
      );
    }
  }
  out.push(`publish detectors (${report.detectors.length}, every profile):`);
  for (const d of report.detectors) out.push(`    ${d.id}  ${d.origin ?? ""}`.trimEnd());
  const anchors = new Set(report.profiles.flatMap((p) => p.anchors.map((a) => a.id))).size;
  out.push(
    `ok: ${report.profiles.length - 1} profile(s), ${anchors} anchor(s), ` +
      `${report.detectors.length} detector(s), ${report.plugins.length} code plugin file(s)`,
  );
  return out.join("\n") + "\n";
}

/** Runs `turnguard check ARGS` and returns the exit code. */
export async function checkCommand(argv: string[]): Promise<number> {
  const { values } = parseOptions("check", argv, {
    config: { type: "string" },
    json: { type: "boolean" },
  });
  const registry = await loadRegistry({
    configFlag: values.config,
    env: envRecord(),
    cwd: process.cwd(),
  });
  const report = checkReport(registry);
  process.stdout.write(values.json ? JSON.stringify(report) + "\n" : formatCheck(report));
  return 0;
}
