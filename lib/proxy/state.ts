/**
 * What the parts of one proxy share: its options and clock, the two outputs, the running
 * turns and the requests in flight each way, and where it is in its life.
 */
import type { PendingRequests } from "../acp/tracker.ts";
import type { SessionCwds } from "../acp/session_cwds.ts";
import type { AgentProcess } from "./agent_io.ts";
import type { ProxyOptions } from "./options.ts";
import type { LineOutput } from "./output.ts";
import type { TextKeeping } from "./reply_text.ts";
import type { Guard } from "./relay.ts";
import type { Turns } from "./turns.ts";

/** One proxy's shared state; each part reads it and changes only its own fields. */
export interface ProxyState {
  readonly opts: ProxyOptions;
  readonly child: AgentProcess;
  readonly now: () => number;
  /** `--verbose` lines. */
  readonly log: (line: string) => void;
  readonly guard: Guard;
  readonly toAgent: LineOutput;
  readonly toClient: LineOutput;
  readonly turns: Turns;
  /** Requests the client sent to the agent. */
  readonly clientPending: PendingRequests;
  /** Requests the agent sent to the client. */
  readonly agentPending: PendingRequests;
  /** Each session's working directory (`{cwd}` in the profile's paths for its turns). */
  readonly sessionCwds: SessionCwds;
  /** How much message text each turn keeps (see ProxyOptions.keepReplyText). */
  readonly keepText: TextKeeping;
  /** Responses turnguard sends on its own, not yet settled: awaited before the end. */
  readonly inFlight: Set<Promise<void>>;
  /** Lifecycle: the agent exited, the client closed its input, a signal was forwarded. */
  agentGone: boolean;
  clientGone: boolean;
  signalled: boolean;
}

/** Why a retry cannot wait now (the agent or the client is gone); null when it can. */
export function goneReason(state: ProxyState): string | null {
  if (state.agentGone) return "the agent exited";
  if (state.clientGone) return "the client closed its input";
  return null;
}

/**
 * Sends a response turnguard made up (timeout, dead agent) at the next line boundary; one
 * decided later is tracked until it is sent.
 */
export function injectReply(
  state: ProxyState,
  reply: Uint8Array | null | Promise<Uint8Array | null>,
): void {
  if (reply === null) return;
  if (reply instanceof Uint8Array) return state.toClient.inject(reply);
  const done = reply.then((bytes) => {
    if (bytes) state.toClient.inject(bytes);
  });
  state.inFlight.add(done);
  done.finally(() => state.inFlight.delete(done));
}
