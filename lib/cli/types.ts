/**
 * `turnguard types`: prints the plugin API's TypeScript declarations, so that a plugin
 * author with only the binary or the npm package can type a plugin.
 */
import declarations from "../types/plugin_api.d.ts" with { type: "text" };
import { parseOptions } from "./args.ts";
import { stdoutSink } from "../io/output.ts";

/** Prints lib/types/plugin_api.d.ts. */
export function typesCommand(argv: string[]): number {
  parseOptions("types", argv, {});
  void stdoutSink.text(declarations);
  return 0;
}
