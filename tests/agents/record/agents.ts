/**
 * The real ACP agents the corpus records, pinned: how each is installed from the npm registry,
 * started, pointed at the mock model API, and authenticated. Config keys were read in each
 * agent's installed sources (paths below are inside the install cache).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Provider } from "./scenarios.ts";

/** One agent of the corpus. */
export interface AgentSpec {
  /** Directory name under tests/agents/corpus/. */
  name: string;
  pkg: string;
  version: string;
  /** The executable under node_modules/.bin and its arguments. */
  bin: string;
  args: string[];
  provider: Provider;
  /** `authenticate` params sent before `session/new` (absent: not sent). */
  authenticate?: Record<string, unknown>;
  /** Writes the agent's config under the throwaway HOME; returns its environment. */
  setup(home: string, baseUrl: string): Record<string, string>;
}

/** Where the agents are installed: outside the repository. */
export function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "turnguard-corpus");
}

/** The install directory of one agent (its own package.json and node_modules). */
export function installDir(a: AgentSpec): string {
  return join(cacheDir(), `${a.name}-${a.version}`);
}

/**
 * Claude Code reads ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY; CLAUDE_CODE_MAX_RETRIES bounds its
 * API retries (cli.js: `if(process.env.CLAUDE_CODE_MAX_RETRIES)return parseInt(...)`);
 * API_TIMEOUT_MS bounds one request (cli.js: `API_TIMEOUT_MS||String(600000)`);
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC turns off telemetry and update checks.
 */
function claudeEnv(home: string, baseUrl: string): Record<string, string> {
  mkdirSync(join(home, ".claude"), { recursive: true });
  return {
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: "sk-ant-corpus-0000000000000000",
    CLAUDE_CODE_MAX_RETRIES: "1",
    API_TIMEOUT_MS: "15000",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    ANTHROPIC_MODEL: "claude-sonnet-4-5",
  };
}

/** The four agents, in recording order. */
export const AGENTS: AgentSpec[] = [
  {
    name: "claude-agent-acp",
    pkg: "@agentclientprotocol/claude-agent-acp",
    version: "0.101.0",
    bin: "claude-agent-acp",
    args: [],
    provider: "anthropic",
    setup: claudeEnv,
  },
  {
    name: "claude-code-acp",
    pkg: "@zed-industries/claude-code-acp",
    version: "0.16.2",
    bin: "claude-code-acp",
    args: [],
    provider: "anthropic",
    setup: claudeEnv,
  },
  {
    name: "gemini-cli",
    pkg: "@google/gemini-cli",
    version: "0.61.0",
    bin: "gemini",
    args: ["--acp"],
    provider: "gemini",
    // bundle/gemini-*.js GeminiAgent.initialize: authMethods id AuthType.USE_GEMINI.
    authenticate: { methodId: "gemini-api-key" },
    // bundle/docs/reference/configuration.md: GOOGLE_GEMINI_BASE_URL, general.maxAttempts
    // (attempts for the main chat model, default 10), security.auth.selectedType.
    setup(home, baseUrl) {
      mkdirSync(join(home, ".gemini"), { recursive: true });
      writeFileSync(
        join(home, ".gemini", "settings.json"),
        JSON.stringify({
          general: { maxAttempts: 2, disableAutoUpdate: true, disableUpdateNag: true },
          security: { auth: { selectedType: "gemini-api-key" } },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          model: { name: "gemini-2.5-pro" },
        }),
      );
      return {
        GEMINI_API_KEY: "AIzaCorpus000000000000000000000000000",
        GOOGLE_GEMINI_BASE_URL: baseUrl,
        GEMINI_CLI_NO_RELAUNCH: "true",
      };
    },
  },
  {
    name: "codex-acp",
    pkg: "@zed-industries/codex-acp",
    version: "0.16.0",
    bin: "codex-acp",
    args: [],
    provider: "openai",
    authenticate: { methodId: "openai-api-key" },
    // A custom model provider (codex config.toml `model_providers`), with its retries bounded
    // by request_max_retries / stream_max_retries and a short stream idle timeout.
    setup(home, baseUrl) {
      const codexHome = join(home, ".codex");
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(
        join(codexHome, "config.toml"),
        [
          `model = "gpt-5"`,
          `model_provider = "mock"`,
          `[model_providers.mock]`,
          `name = "mock"`,
          `base_url = "${baseUrl}/v1"`,
          `env_key = "OPENAI_API_KEY"`,
          `wire_api = "responses"`,
          `request_max_retries = 1`,
          `stream_max_retries = 1`,
          `stream_idle_timeout_ms = 10000`,
          ``,
        ].join("\n"),
      );
      return { CODEX_HOME: codexHome, OPENAI_API_KEY: "sk-corpus-000000000000000000000000" };
    },
  },
];
