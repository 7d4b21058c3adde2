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
  /**
   * Other packages installed next to it, pinned (`name@version`): a runtime the agent needs
   * (the `node` package's binary for agents that need a newer Node than the system's) or the
   * agent an adapter starts. Their binaries come first on the agent's PATH.
   */
  with?: string[];
  /** The executable under node_modules/.bin and its arguments. */
  bin: string;
  args: string[];
  provider: Provider;
  /** `authenticate` params sent before `session/new` (absent: not sent). */
  authenticate?: Record<string, unknown>;
  /** Writes the agent's config under the throwaway HOME; returns its environment. */
  setup(home: string, baseUrl: string): Record<string, string>;
  /**
   * The variables of `setup`'s environment that bound the agent's own retries; a scenario
   * that records the agent's default retries (`agentRetries`) leaves them out.
   */
  retryBounds?: string[];
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

/** Node 22 from the npm registry (`node` package: its binary): qwen-code and pi need ≥ 22. */
const NODE22 = "node@22.23.3";

/** The agents, in recording order. */
export const AGENTS: AgentSpec[] = [
  {
    name: "claude-agent-acp",
    pkg: "@agentclientprotocol/claude-agent-acp",
    version: "0.101.0",
    bin: "claude-agent-acp",
    args: [],
    provider: "anthropic",
    setup: claudeEnv,
    retryBounds: ["CLAUDE_CODE_MAX_RETRIES"],
  },
  {
    name: "claude-code-acp",
    pkg: "@zed-industries/claude-code-acp",
    version: "0.16.2",
    bin: "claude-code-acp",
    args: [],
    provider: "anthropic",
    setup: claudeEnv,
    retryBounds: ["CLAUDE_CODE_MAX_RETRIES"],
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
  {
    name: "opencode",
    pkg: "opencode-ai",
    version: "1.18.33",
    bin: "opencode",
    args: ["acp"],
    provider: "openai",
    setup: opencodeSetup,
  },
  {
    name: "qwen-code",
    pkg: "@qwen-code/qwen-code",
    version: "0.24.4",
    with: [NODE22],
    bin: "qwen",
    args: ["--acp"],
    provider: "openai",
    authenticate: { methodId: "openai" },
    setup: qwenSetup,
  },
  {
    name: "pi-acp",
    pkg: "pi-acp",
    version: "0.0.34",
    with: ["@earendil-works/pi-coding-agent@1.6.0", NODE22],
    bin: "pi-acp",
    args: [],
    provider: "openai",
    setup: piSetup,
  },
];

/**
 * opencode reads $XDG_CONFIG_HOME/opencode/opencode.json: a custom provider on the bundled
 * `@ai-sdk/openai-compatible` package with `options.baseURL`/`apiKey` and its models
 * (https://opencode.ai/docs/providers, "Custom provider"). The OPENCODE_DISABLE_* switches (names
 * read in the installed binary) keep it from fetching the models.dev catalog, plugins, LSP
 * servers and updates, which the loopback-only namespace would fail anyway.
 */
function opencodeSetup(home: string, baseUrl: string): Record<string, string> {
  const dir = join(home, ".config", "opencode");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      autoupdate: false,
      share: "disabled",
      model: "mock/gpt-5",
      small_model: "mock/gpt-5",
      provider: {
        mock: {
          npm: "@ai-sdk/openai-compatible",
          name: "mock",
          options: { baseURL: `${baseUrl}/v1`, apiKey: "sk-corpus-000000000000000000000000" },
          models: { "gpt-5": { name: "gpt-5" } },
        },
      },
    }),
  );
  return {
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1",
  };
}
/**
 * qwen-code's OpenAI auth reads OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL; its
 * ~/.qwen/settings.json (schema in the installed chunks: settingsSchema `model.generationConfig`
 * maxRetries "Maximum number of retries for failed requests", timeout,
 * streamIdleTimeoutMs; `security.auth.selectedType`; `privacy.usageStatisticsEnabled`) bounds
 * its retries and request time. ACP `authenticate` method id "openai" (acpAgent
 * buildAuthMethods).
 */
function qwenSetup(home: string, baseUrl: string): Record<string, string> {
  mkdirSync(join(home, ".qwen"), { recursive: true });
  writeFileSync(
    join(home, ".qwen", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "openai" } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      model: {
        name: "gpt-5",
        generationConfig: { maxRetries: 1, timeout: 15000, streamIdleTimeoutMs: 10000 },
      },
    }),
  );
  return {
    OPENAI_API_KEY: "sk-corpus-000000000000000000000000",
    OPENAI_BASE_URL: `${baseUrl}/v1`,
    OPENAI_MODEL: "gpt-5",
  };
}
/**
 * pi-acp starts `pi --mode rpc` from PATH (dist/index.js getPiCommand). pi reads
 * ~/.pi/agent/models.json (docs/models-configuration.md: a provider with `baseUrl`, `api`
 * "openai-completions", `apiKey`, `models`) and ~/.pi/agent/settings.json (docs/settings.md:
 * `defaultProvider`, `defaultModel`, `retry.maxRetries` "Maximum agent-level retry attempts",
 * default 3, `retry.baseDelayMs` default 2000, `httpIdleTimeoutMs`); PI_OFFLINE and
 * PI_SKIP_VERSION_CHECK turn off its network activity (docs/environment-variables.md).
 */
function piSetup(home: string, baseUrl: string): Record<string, string> {
  const dir = join(home, ".pi", "agent");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "models.json"),
    JSON.stringify({
      providers: {
        mock: {
          name: "mock",
          baseUrl: `${baseUrl}/v1`,
          api: "openai-completions",
          apiKey: "sk-corpus-000000000000000000000000",
          models: [{ id: "gpt-5", name: "gpt-5" }],
        },
      },
    }),
  );
  writeFileSync(
    join(dir, "settings.json"),
    JSON.stringify({
      defaultProvider: "mock",
      defaultModel: "gpt-5",
      httpIdleTimeoutMs: 15000,
      retry: { enabled: true, maxRetries: 1, baseDelayMs: 1000 },
      enableInstallTelemetry: false,
    }),
  );
  return { PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
}
