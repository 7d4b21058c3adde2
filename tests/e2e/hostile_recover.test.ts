/**
 * A recovered reply (`--recover-replies`, lib/proxy/finish.ts) past the Outcome's reply cap
 * (REPLY_TEXT_BYTES) and holding terminal control characters: the client, told the turn is
 * `ok`, must get all of what the agent recorded and it lacked, byte for byte as JSON carries
 * it; the Outcome keeps its capped copy and says so.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  killedAfterEach,
  messageText,
  openSession,
  profileArgs,
  prompt,
  readOutcomes,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";
import { REPLY_TEXT_BYTES } from "../../lib/agent/launch.ts";

setDefaultTimeout(60_000);
const track = killedAfterEach();

const BIG = "The answer is 4: two plus two \u001b[31mmakes\u0007 four. " +
  "0123456789abcdef".repeat(200 * 64);

describe("a recovered reply beyond the Outcome's reply cap", () => {
  test("the client gets all of it; the Outcome keeps its first bytes and says so", async () => {
    const s = scratch();
    const p = track(
      startProxy(s, profileArgs(s, "claude", ["--recover-replies"])),
    );
    const text = await withClient(p, async (ctx, updates) => {
      const sessionId = await openSession(ctx);
      await prompt(ctx, sessionId, "records-shorter-big");
      return messageText(updates);
    });
    await p.exited;
    expect(text.length).toBe(BIG.length);
    expect(text).toBe(BIG);
    const [o] = readOutcomes(s.outcomes);
    expect(o.status).toBe("ok");
    expect(new TextEncoder().encode(o.reply.recovered!).length).toBeLessThanOrEqual(
      REPLY_TEXT_BYTES,
    );
    expect(o.diagnostics.join("\n")).toContain("reply.recovered keeps the first");
  });
});
