/** The built-in code packs, embedded in the binary and loaded before any config file. */
import type { PluginModule } from "../lib/plugin.ts";
import generic from "./generic.ts";

/** Built-in packs by name, in load order. */
export const BUILTIN_PLUGINS: ReadonlyArray<{ name: string; module: PluginModule }> = [
  { name: "generic", module: generic },
];
