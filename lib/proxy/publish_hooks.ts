/**
 * The publish fallback as proxy turn hooks: after a turn is decided and before its
 * `session/prompt` response is forwarded, settle the publish and put it in the Outcome.
 */
import { turnText } from "./turns.ts";
import type { TurnHooks } from "./hooks.ts";
import { type PublishContext, settlePublish } from "../publish/engine.ts";

/** Hooks that settle each turn's publish; none at all when the fallback is not armed. */
export function publishHooks(ctx: PublishContext): TurnHooks {
  if (ctx.settings === null) return {};
  return {
    async beforeRespond(turn, outcome) {
      const { publish, diagnostics, unpublished } = await settlePublish(ctx, {
        sessionId: turn.sessionId,
        stopReason: outcome.status === "cancelled" ? "cancelled" : outcome.stopReason,
        // A reply cut short is no answer to publish, whatever stopReason the agent gave
        // (docs/EVIDENCE.md); a re-streamed one publishes its last attempt (reply.text).
        failed: outcome.status === "failed" || outcome.status === "truncated",
        text: outcome.reply.text ?? turnText(turn),
        toolCalls: turn.toolCalls.values(),
        promptMeta: turn.promptMeta,
      });
      if (unpublished) ctx.warn?.(`turnguard: ${unpublished}`);
      return { publish, diagnostics: [...outcome.diagnostics, ...diagnostics] };
    },
  };
}
