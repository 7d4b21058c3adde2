/** The built-in code packs, embedded in the binary and loaded before any config file. */
import { type PluginModule } from "../lib/plugin_api.ts";
import claude from "./claude.ts";
import codex from "./codex.ts";
import opencode from "./opencode.ts";
import qwen from "./qwen.ts";
import gemini from "./gemini.ts";
import generic from "./generic.ts";
import buzz from "./buzz.ts";
import claudeRecords from "./claude_records.ts";
import codexRecords from "./codex_records.ts";
import geminiRecords from "./gemini_records.ts";
import piRecords from "./pi_records.ts";
import qwenRecords from "./qwen_records.ts";

/** Built-in packs by name, in load order. */
export const BUILTIN_PLUGINS: ReadonlyArray<{ name: string; module: PluginModule }> = [
  { name: "generic", module: generic },
  { name: "gemini", module: gemini },
  { name: "claude", module: claude },
  { name: "codex", module: codex },
  { name: "opencode", module: opencode },
  { name: "qwen", module: qwen },
  { name: "buzz", module: buzz },
  { name: "claude_records", module: claudeRecords },
  { name: "codex_records", module: codexRecords },
  { name: "gemini_records", module: geminiRecords },
  { name: "pi_records", module: piRecords },
  { name: "qwen_records", module: qwenRecords },
];
