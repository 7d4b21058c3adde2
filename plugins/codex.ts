/**
 * codex-acp pack. Two adapters exist and both attach Codex's typed `CodexErrorInfo`:
 * - the TypeScript one (agentclientprotocol/codex-acp src/CodexEventHandler.ts,
 *   `createTurnErrorData`) fails the prompt with `RequestError.internalError({message,
 *   codexErrorInfo, additionalDetails})` — camelCase values: `"usageLimitExceeded"`,
 *   `"serverOverloaded"`, `{"responseStreamDisconnected":{"httpStatusCode":429}}` — and streams
 *   other errors as agent text `<message>\n\n` before `end_turn`;
 * - the Rust one (zed-industries/codex-acp src/thread.rs, `EventMsg::Error`) sends
 *   `Error::internal_error().data({"message", "codex_error_info"})` — snake_case:
 *   `"usage_limit_exceeded"`, `{"response_stream_disconnected":{"http_status_code":502}}`.
 * The variants are Codex's own (openai/codex codex-rs/app-server/README.md "Errors",
 * codex-rs/core/src/error.rs `to_codex_protocol_error`). Codex's sentences (error.rs):
 * "You've hit your usage limit. ... Try again at 3:45 PM." / "... or try again later.",
 * "Quota exceeded. Check your plan and billing details.", "To use Codex with your ChatGPT plan,
 * upgrade to Plus", "Codex ran out of room in the model's context window...", "We're currently
 * experiencing high demand, which may cause temporary errors.", "stream disconnected before
 * completion: ...", "exceeded retry limit, last status: 429 Too Many Requests",
 * "unexpected status 401 Unauthorized: ...", "Connection failed: ...".
 */
import {
  type AnchorHit,
  type Category,
  defineAnchor,
  definePlugin,
  readInput,
  statusCategory,
  tidyCause,
} from "../lib/plugin_api.ts";

/** Categories of Codex's string variants, by their snake_case name. */
export const CODEX_ERROR_CATEGORY: Readonly<Record<string, Category>> = {
  context_window_exceeded: "context",
  usage_limit_exceeded: "quota",
  session_budget_exceeded: "quota",
  server_overloaded: "capacity",
  internal_server_error: "capacity",
  unauthorized: "auth",
};

/** Variants that carry `http_status_code`: no status means the connection itself failed. */
const HTTP_VARIANTS = new Set([
  "http_connection_failed",
  "response_stream_connection_failed",
  "response_stream_disconnected",
  "response_too_many_failed_attempts",
]);

/** `usageLimitExceeded` and `usage_limit_exceeded` alike. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The variant name and HTTP status of a `codexErrorInfo` / `codex_error_info` value. */
export function codexErrorInfo(data: unknown): { variant: string; status?: number } | null {
  if (typeof data !== "object" || data === null) return null;
  const record = data as Record<string, unknown>;
  const info = record.codexErrorInfo ?? record.codex_error_info;
  if (typeof info === "string") return { variant: snake(info) };
  if (typeof info !== "object" || info === null) return null;
  const [name, detail] = Object.entries(info as Record<string, unknown>)[0] ?? [];
  if (name === undefined) return null;
  const fields = typeof detail === "object" && detail !== null
    ? detail as Record<string, unknown>
    : {};
  const status = fields.httpStatusCode ?? fields.http_status_code;
  return { variant: snake(name), ...(typeof status === "number" ? { status } : {}) };
}

/** The category of a variant (and its status). */
export function variantCategory(variant: string, status?: number): Category | undefined {
  const byStatus = statusCategory(status);
  if (byStatus !== undefined && (HTTP_VARIANTS.has(variant) || variant === "unauthorized")) {
    return byStatus;
  }
  if (HTTP_VARIANTS.has(variant)) return status === undefined ? "network" : undefined;
  return CODEX_ERROR_CATEGORY[variant];
}

/** Codex's own sentences and what they mean. */
const SENTENCES: ReadonlyArray<{ id: string; category: Category; pattern: RegExp }> = [
  {
    id: "codex.usage-limit",
    category: "quota",
    pattern:
      /you've hit your usage limit|quota exceeded\. check your plan and billing details|to use codex with your chatgpt plan, upgrade/i,
  },
  {
    id: "codex.context-window",
    category: "context",
    pattern: /ran out of room in the model's context window|exceeds the context window/i,
  },
  {
    id: "codex.high-demand",
    category: "capacity",
    pattern: /currently experiencing high demand/i,
  },
];

/** The codex pack: its anchors (`codex.*`), loaded as the built-in `builtin:codex`. */
export default definePlugin({
  anchors: [
    defineAnchor({
      id: "codex.error-info",
      priority: 160,
      on: ["error"],
      match(input) {
        if (input.kind !== "error") return null;
        const info = codexErrorInfo(input.error.data);
        if (info === null) return null;
        const data = input.error.data as Record<string, unknown>;
        const own = typeof data.message === "string" ? data.message : "";
        const cause = tidyCause(own || readInput(input).cause, "none");
        if (cause === "") return null;
        const hit: AnchorHit = { cause };
        const category = variantCategory(info.variant, info.status);
        if (category !== undefined) hit.category = category;
        if (info.status !== undefined) hit.code = info.status;
        return hit;
      },
    }),
    ...SENTENCES.map(({ id, category, pattern }) =>
      defineAnchor({
        id,
        priority: 150,
        on: ["text", "error"],
        match(input) {
          const { cause } = readInput(input);
          return pattern.test(cause) ? { cause: tidyCause(cause, "none"), category } : null;
        },
      })
    ),
    defineAnchor({
      id: "codex.retry-limit",
      priority: 145,
      on: ["text", "error"],
      match(input) {
        const { cause } = readInput(input);
        const m = cause.match(/exceeded retry limit, last status: (\d{3})/i);
        if (!m) return null;
        const status = Number(m[1]);
        return {
          cause: tidyCause(cause, "none"),
          category: statusCategory(status) ?? "network",
          code: status,
        };
      },
    }),
  ],
});
