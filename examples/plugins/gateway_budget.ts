/**
 * Example anchor plugin: an in-house LLM gateway that logs its budget wall as
 *   2026-03-02T10:15:04Z ERROR llm-gateway: budget exhausted for team=payments
 *   (spent 500.00 USD of 500.00 USD); window resets in 3h12m
 * The plugin finds that line in the agent's log (or in its streamed text), returns the
 * readable cause, the category and when the budget comes back.
 *
 * A plugin imports nothing of turnguard at run time: the `import type` below is erased when
 * the file is loaded, it only gives the editor the types. Copy it anywhere, list it in your
 * anchors.toml (`plugins = ["gateway_budget.ts"]`), and test it with
 * `turnguard scan --config anchors.toml your.log`.
 */
import type { AnchorHit, AnchorInput } from "../../lib/plugin_api.ts";

const WALL = /llm-gateway: (?<cause>budget exhausted for team=[\w-]+.*)$/;
const RESETS = /resets in (?:(\d+)h)?(?:(\d+)m)?/;

function textOf(input: AnchorInput): string {
  if (input.kind === "log") return input.line;
  if (input.kind === "text") return input.text;
  return typeof input.error.message === "string" ? input.error.message : "";
}

export default {
  anchors: [
    {
      id: "acme.gateway-budget",
      priority: 120,
      on: ["log", "text"],
      match(input: AnchorInput): AnchorHit | null {
        const m = WALL.exec(textOf(input));
        if (!m?.groups) return null;
        const cause = m.groups.cause.trim();
        const r = RESETS.exec(cause);
        const afterMs = r ? (Number(r[1] ?? 0) * 60 + Number(r[2] ?? 0)) * 60_000 : undefined;
        return {
          cause,
          category: "quota",
          ...(afterMs ? { retry: { afterMs, reason: "gateway budget window" } } : {}),
        };
      },
    },
  ],
};
