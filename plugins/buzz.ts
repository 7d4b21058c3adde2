/**
 * The buzz publish detector: a tool call that ran `buzz messages send` published the turn's
 * reply, to the channel of its `--channel X` / `--channel=X` (none: any channel). Read from
 * the command line as a shell would split it, so `echo "buzz messages send"`,
 * `grep "messages send" notes`, `buzz messages get` and `buzz reactions add` are not
 * publishes. Written with the public plugin API, like any user detector.
 */
import {
  definePlugin,
  definePublishDetector,
  detectCommand,
  type PublishCommandSpec,
} from "../lib/plugin_api.ts";

/** `buzz messages send --channel X ...`. */
export const BUZZ_SEND: PublishCommandSpec = {
  program: "buzz",
  subcommand: ["messages", "send"],
  channelFlags: ["--channel"],
};

export default definePlugin({
  detectors: [
    definePublishDetector({
      id: "buzz",
      detect: (call) => detectCommand(call, BUZZ_SEND),
    }),
  ],
});
