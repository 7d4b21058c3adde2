/** SessionCwds: each session's cwd from `session/new` (by its answer) and `session/load`. */
import { describe, expect, test } from "bun:test";
import { SessionCwds } from "../../../lib/acp/session_cwds.ts";

describe("SessionCwds", () => {
  test("session/new's cwd goes to the session its answer names; session/load's at once", () => {
    const c = new SessionCwds();
    c.requested(1, { cwd: "/work/a", mcpServers: [] });
    expect(c.get("s1")).toBeUndefined();
    c.answered(1, { sessionId: "s1" });
    c.loaded({ sessionId: "s2", cwd: "/work/b" });
    expect([c.get("s1"), c.get("s2")]).toEqual(["/work/a", "/work/b"]);
  });

  test("an answer to another request, an error, or no cwd: nothing is remembered", () => {
    const c = new SessionCwds();
    c.requested("x", { mcpServers: [] });
    c.answered("x", { sessionId: "s1" });
    c.requested(2, { cwd: "/w" });
    c.answered(3, { sessionId: "s3" });
    c.answered(2, { notASession: true });
    expect([c.get("s1"), c.get("s3"), c.size]).toEqual([undefined, undefined, 0]);
  });

  test("bounded: past max sessions the oldest is dropped", () => {
    const c = new SessionCwds(3);
    for (let i = 1; i <= 4; i++) c.loaded({ sessionId: `s${i}`, cwd: `/w/${i}` });
    expect([c.size, c.get("s1"), c.get("s4")]).toEqual([3, undefined, "/w/4"]);
    // A session loaded again is the newest.
    c.loaded({ sessionId: "s2", cwd: "/w/2b" });
    c.loaded({ sessionId: "s5", cwd: "/w/5" });
    expect([c.get("s2"), c.get("s3")]).toEqual(["/w/2b", undefined]);
    // Unanswered session/new requests are bounded too.
    for (let i = 0; i < 10; i++) c.requested(i, { cwd: `/r/${i}` });
    c.answered(0, { sessionId: "old" });
    c.answered(9, { sessionId: "new" });
    expect([c.get("old"), c.get("new")]).toEqual([undefined, "/r/9"]);
  });
});
