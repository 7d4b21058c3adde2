/**
 * The agent to start, as both modes give it (`run` and the proxy), and what turnguard
 * keeps of what it writes. One definition: the proxy does not borrow `run`'s.
 */
import type { Profile } from "../config/config.ts";
import type { Classifier } from "../cause/classifier.ts";

/** Bytes of the agent's stderr kept for the message of its failure or death. */
export const STDERR_TAIL_BYTES = 8 * 1024;
/** Bytes of reply text kept in an Outcome (`reply.text`). */
export const REPLY_TEXT_BYTES = 64 * 1024;

/** The agent to start and what turnguard knows of it; shared by run and proxy. */
export interface AgentLaunch {
  command: string;
  args: string[];
  profile: Profile;
  /** The profile's classifier (lib/config/registry.ts `profileClassifier`). */
  classifier: Classifier;
  env: Record<string, string | undefined>;
  cwd?: string;
  /**
   * Leave the processes that left the agent's process group (`setsid` daemons) running
   * when the agent ends (`--keep-daemons`, config `keep_daemons = true`). The agent's own
   * group is stopped either way.
   */
  keepDaemons?: boolean;
}
