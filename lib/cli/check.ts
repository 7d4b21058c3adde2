/**
 * `turnguard check [--config PATH] [--json] [--verbose]`: validates the configuration and loads every
 * plugin exactly as `run` and `proxy` would (each profile's publish table included, as if
 * the fallback were armed), then prints a summary (with --verbose, what is active per agent
 * profile), and a warning per
 * `anchors` pattern that selects nothing. Exit 0 when all is well (warnings included); 2
 * with the first error (file, line, key) otherwise.
 */
import type { Profile } from "../config/config.ts";
import type { LoadedAnchor } from "../plugin/api.ts";
import { publishSettings, selectDetectors } from "../publish/settings.ts";
import { loadRegistry, profileAnchors, profileReaders, type Registry } from "../config/registry.ts";
import { DEFAULT_SETTLE_MS } from "../cause/session_records.ts";
import { DEFAULT_WAIT_MS, readersShowEnd } from "../cause/records_wait.ts";
import { envRecord, type OptionSpec, parseOptions } from "./args.ts";
import { stdoutSink } from "../io/output.ts";
import { expandTemplate } from "../io/path_template.ts";
import { homeDir } from "../io/env_dirs.ts";
import { ConfigError } from "../errors.ts";

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

/**
 * Checks what the proxy checks only once a profile's publish fallback is armed: the table's
 * detectors must exist (the proxy's own functions, so the wording is the same). Throws
 * UsageError.
 */
function checkPublish(registry: Registry, profile: Profile): void {
  const settings = publishSettings(profile.publish, true);
  if (settings) selectDetectors(settings, registry.detectors, profile.name);
}

/** One warning per `anchors` pattern of a profile that selects none of its anchors. */
function patternWarnings(registry: Registry, profile: Profile): string[] {
  return (profile.anchors ?? []).flatMap((pattern) =>
    profileAnchors(registry.anchors, { ...profile, anchors: [pattern] }).length === 0
      ? [`agent ${profile.name}: anchors pattern "${pattern}" matches no anchor`]
      : []
  );
}

/**
 * Throws a ConfigError (file, line, key) for the first path template of a profile that this
 * environment cannot expand: a variable with no value and no default. `run` and `proxy`
 * skip such a pattern with a diagnostic; `check` says it before any turn.
 */
export function checkTemplates(profile: Profile, env: Record<string, string | undefined>): void {
  const ctx = { env, home: homeDir(env), cwd: "/", session: "s", sha256: () => "0" };
  for (const key of ["logs", "session_records"] as const) {
    const templates = (key === "logs" ? profile.logs : profile.sessionRecords) ?? [];
    templates.forEach((t, i) => {
      const { problem } = expandTemplate(t, ctx);
      if (problem === null) return;
      const at = profile.origins?.[key];
      throw new ConfigError(
        at?.path ?? "<config>",
        at?.line ?? null,
        `${at?.key ?? key}[${i}]`,
        problem,
      );
    });
  }
}

/** What `check --json` prints; throws the first error a command would stop on. */
export function checkReport(registry: Registry, env: Record<string, string | undefined>) {
  const configured = [...registry.profiles.values()];
  for (const p of configured) checkPublish(registry, p);
  for (const p of configured) checkTemplates(p, env);
  const warnings = [
    ...registry.warnings,
    ...configured.flatMap((p) => patternWarnings(registry, p)),
  ];
  const profiles = [...configured, OTHER].map((p) => ({
    name: p.name,
    match: p.match,
    logs: p.logs,
    logFormat: p.logFormat,
    anchors: profileAnchors(registry.anchors, p).map(describeAnchor),
    sessionRecords: p.sessionRecords ?? [],
    recordsSettleMs: p.recordsSettleMs ?? DEFAULT_SETTLE_MS,
    /** The wait for the turn's end record; null: the readers show no end (the settle window). */
    recordsWaitMs: readersShowEnd(profileReaders(registry.readers, p))
      ? p.recordsWaitMs ?? DEFAULT_WAIT_MS
      : null,
    readers: profileReaders(registry.readers, p).map((r) => ({
      id: r.id,
      origin: r.origin ?? null,
    })),
  }));
  return {
    files: registry.files,
    plugins: registry.pluginFiles,
    pluginBudgetMs: registry.pluginBudgetMs,
    profiles,
    detectors: registry.detectors.map((d) => ({ id: d.id, origin: d.origin ?? null })),
    warnings,
  };
}

/** The flags `turnguard check` accepts. */
export const CHECK_OPTIONS = {
  config: { type: "string" },
  json: { type: "boolean" },
  verbose: { type: "boolean", short: "v" },
} satisfies OptionSpec;

/**
 * The report as text: the files, one line per profile and the totals; with `verbose`,
 * every profile's anchors and every detector too.
 */
export function formatCheck(report: ReturnType<typeof checkReport>, verbose = false): string {
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
    if (!verbose) {
      out.push(`profile ${p.name}${match}: ${p.anchors.length} anchor(s)`);
      continue;
    }
    out.push(`profile ${p.name}${match}`);
    if (p.logs.length > 0) out.push(`  logs (${p.logFormat}): ${p.logs.join(", ")}`);
    if (p.sessionRecords.length > 0) {
      out.push(
        `  session records (${
          p.recordsWaitMs !== null
            ? `end record awaited up to ${p.recordsWaitMs} ms`
            : `settle ${p.recordsSettleMs} ms`
        }; readers ${p.readers.map((r) => r.id).join(", ") || "none"}): ${
          p.sessionRecords.join(", ")
        }`,
      );
    }
    out.push(`  anchors (${p.anchors.length}):`);
    for (const a of [...p.anchors].sort((x, y) => y.priority - x.priority)) {
      out.push(
        `    ${a.id}  priority ${a.priority}  on ${a.on.join(",")}  ${a.origin ?? ""}`.trimEnd(),
      );
    }
  }
  if (verbose) {
    out.push(`publish detectors (${report.detectors.length}, every profile):`);
    for (const d of report.detectors) out.push(`    ${d.id}  ${d.origin ?? ""}`.trimEnd());
  }
  for (const w of report.warnings) out.push(`warning: ${w}`);
  const anchors = new Set(report.profiles.flatMap((p) => p.anchors.map((a) => a.id))).size;
  out.push(
    `ok: ${report.profiles.length - 1} profile(s), ${anchors} anchor(s), ` +
      `${report.detectors.length} detector(s), ${report.plugins.length} code plugin file(s)` +
      (verbose ? "" : " (--verbose lists them)"),
  );
  return out.join("\n") + "\n";
}

/** Runs `turnguard check ARGS` and returns the exit code. */
export async function checkCommand(argv: string[]): Promise<number> {
  const { values } = parseOptions("check", argv, CHECK_OPTIONS);
  const env = envRecord();
  const registry = await loadRegistry({ configFlag: values.config, env, cwd: process.cwd() });
  const report = checkReport(registry, env);
  if (values.json) void stdoutSink.json(report);
  else void stdoutSink.text(formatCheck(report, values.verbose === true));
  return 0;
}
