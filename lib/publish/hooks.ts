/**
 * The publish fallback as proxy turn hooks: after a turn is decided and before its
 * `session/prompt` response is forwarded, settle the publish and put it in the Outcome.
 * Also the one-call set-up the proxy command uses (flags, profile, detectors → hooks).
 */
import { turnText } from "../acp/turns.ts";
import type { Profile } from "../config.ts";
import type { LoadedPublishDetector } from "../plugin.ts";
import type { TurnHooks } from "../proxy.ts";
import { type PublishContext, settlePublish } from "./engine.ts";
import { readPublishFlags } from "./flags.ts";
import { publishSettings, selectDetectors } from "./settings.ts";

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

/**
 * The publish hooks for `turnguard proxy`: armed by the profile's `publish` table or by
 * `--publish-fallback`, variables from `TURNGUARD_VAR_*` and `--var`. An unknown detector
 * or a bad `--var` is a usage error before the agent starts.
 */
export function proxyPublishHooks(opts: {
  values: { "publish-fallback"?: boolean; var?: string[] };
  profile: Profile;
  detectors: readonly LoadedPublishDetector[];
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  warn?: (line: string) => void;
}): TurnHooks {
  const flags = readPublishFlags(opts.values, opts.env);
  const settings = publishSettings(opts.profile.publish, flags.arm);
  const detectors = settings ? selectDetectors(settings, opts.detectors, opts.profile.name) : [];
  return publishHooks({
    settings,
    detectors,
    vars: flags.vars,
    env: opts.env,
    cwd: opts.cwd,
    warn: opts.warn,
  });
}
