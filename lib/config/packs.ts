/**
 * Loads plugin modules: the built-in packs, then code plugins from the paths config files
 * name (never implicitly from the working directory). Every export is validated with
 * valibot; a bad plugin is a ConfigError naming the file and what is wrong.
 */
import { existsSync } from "node:fs";
import * as v from "valibot";
import { BUILTIN_PLUGINS } from "../../plugins/index.ts";
import { errorText } from "../errors.ts";
import type { PluginRef } from "./config.ts";
import { ConfigError } from "../errors.ts";
import {
  type LoadedAnchor,
  type LoadedPublishDetector,
  type LoadedRecordReader,
  PluginModuleSchema,
} from "../plugin/api.ts";
import { PluginWorker, reviveExport } from "../plugin/host.ts";
import { PLUGIN_CONTEXT } from "../plugin_api.ts";
import { formatKeyPath, type KeyStep } from "./toml_locate.ts";

/** Everything the plugins contributed. */
export interface LoadedPlugins {
  /** Validated anchors, in load order. */
  anchors: LoadedAnchor[];
  /** Validated publish detectors, in load order. */
  detectors: LoadedPublishDetector[];
  /** Validated session record readers, in load order (a set without them has none). */
  readers?: LoadedRecordReader[];
}

/** Validates one module's default export; `origin` names it in errors and diagnostics. */
export function validatePluginModule(
  exported: unknown,
  origin: string,
  line: number | null = null,
): LoadedPlugins {
  const result = v.safeParse(PluginModuleSchema(), exported);
  if (!result.success) {
    const issue = result.issues[0];
    const keyPath = (issue.path ?? []).map((p) => p.key as KeyStep);
    let detail = issue.message;
    if (issue.kind === "schema" && issue.type === "strict_object") {
      const key = String(keyPath.at(-1));
      detail = issue.expected === "never" ? `unknown key \`${key}\`` : `missing \`${key}\``;
    }
    throw new ConfigError(
      origin,
      line,
      keyPath.length ? `export default.${formatKeyPath(keyPath)}` : "export default",
      detail,
    );
  }
  return {
    anchors: result.output.anchors.map((a) => ({ ...a, origin: a.origin ?? origin })),
    detectors: result.output.detectors.map((d) => ({ ...d, origin: d.origin ?? origin })),
    readers: result.output.readers.map((r) => ({ ...r, origin: r.origin ?? origin })),
  };
}

/** The built-in packs, validated like any user plugin. */
export function builtinPlugins(): Required<LoadedPlugins> {
  return merge(
    BUILTIN_PLUGINS.map(({ name, module }) => validatePluginModule(module, `builtin:${name}`)),
  );
}

/** How code plugins are run: the per-turn time budget and the import timeout. */
export interface CodePluginOptions {
  /** Time each plugin file may take per budget scope (lib/plugin/budget.ts). */
  budgetMs?: number;
  /** Time a module may take to import, at start-up and after a restart. */
  loadTimeoutMs?: number;
}

/**
 * Node runs a `.ts` plugin only from 22.18 / 23.6 on, where it strips types by itself; an
 * older Node says `Unknown file extension ".ts"`, which tells the user nothing they can do.
 */
function typeStrippingHint(path: string, err: unknown): string {
  return path.endsWith(".ts") && /Unknown file extension/.test(errorText(err))
    ? ` (Node ${process.version} cannot strip types: use Node >= 22.18, or a .js plugin)`
    : "";
}

/**
 * Imports and validates the code plugins a config names, each in a worker thread of its own
 * (lib/plugin/host.ts): the module's code never runs in turnguard's own thread, and its
 * anchors and detectors call into the worker under the per-turn budget.
 */
export async function loadCodePlugins(
  refs: readonly PluginRef[],
  options: CodePluginOptions = {},
): Promise<LoadedPlugins> {
  const loaded: LoadedPlugins[] = [];
  for (const ref of refs) {
    const where = `${ref.from}${ref.line ? `:${ref.line}` : ""}`;
    if (!existsSync(ref.path)) {
      throw new ConfigError(ref.path, null, null, `plugin file not found (named in ${where})`);
    }
    const worker = new PluginWorker(
      ref.path,
      options.budgetMs,
      options.loadTimeoutMs,
      PLUGIN_CONTEXT,
    );
    let shape: unknown;
    try {
      shape = await worker.load();
    } catch (err) {
      worker.close();
      throw new ConfigError(
        ref.path,
        null,
        null,
        `plugin failed to load: ${errorText(err)}${typeStrippingHint(ref.path, err)}`,
      );
    }
    if (shape === undefined) {
      worker.close();
      throw new ConfigError(
        ref.path,
        null,
        "export default",
        "a plugin must default-export { anchors, detectors }",
      );
    }
    try {
      loaded.push(
        validatePluginModule(reviveExport(shape, (path, arg) => worker.call(path, arg)), ref.path),
      );
    } catch (err) {
      worker.close();
      throw err;
    }
  }
  return merge(loaded);
}

/** Joins plugin sets; a later anchor, detector or reader with an id already seen replaces it. */
export function merge(sets: readonly LoadedPlugins[]): Required<LoadedPlugins> {
  const anchors = new Map<string, LoadedAnchor>();
  const detectors = new Map<string, LoadedPublishDetector>();
  const readers = new Map<string, LoadedRecordReader>();
  for (const set of sets) {
    for (const a of set.anchors) anchors.delete(a.id), anchors.set(a.id, a);
    for (const d of set.detectors) detectors.delete(d.id), detectors.set(d.id, d);
    for (const r of set.readers ?? []) readers.delete(r.id), readers.set(r.id, r);
  }
  return {
    anchors: [...anchors.values()],
    detectors: [...detectors.values()],
    readers: [...readers.values()],
  };
}
