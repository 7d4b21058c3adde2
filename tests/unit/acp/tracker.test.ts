/**
 * `PendingRequests` (lib/acp/tracker.ts): the requests in flight each way.
 */
import { describe, expect, test } from "bun:test";
import { PendingRequests } from "../../../lib/acp/tracker.ts";

describe("PendingRequests", () => {
  test("tracks by id, counts per session, a reused id waits behind the first", () => {
    const p = new PendingRequests();
    p.add(1, "session/prompt", "s1");
    p.add("1", "session/new", null);
    p.add(2, "session/request_permission", "s1");
    expect([p.size, p.countFor("s1"), p.countFor("s2")]).toEqual([3, 2, 0]);
    expect(p.take(1)?.method).toBe("session/prompt");
    expect(p.take(1)).toBeUndefined();
    expect(p.get("1")?.method).toBe("session/new");
    // A duplicate in-flight id: both requests wait, each is answered once (oldest first).
    p.add(2, "other", "s2");
    expect([p.size, p.countFor("s1"), p.countFor("s2")]).toEqual([3, 1, 1]);
    expect(p.all().map((r) => r.method)).toEqual([
      "session/new",
      "session/request_permission",
      "other",
    ]);
    expect(p.take(2)?.method).toBe("session/request_permission");
    expect(p.take(2)?.method).toBe("other");
    expect(p.take(2)).toBeUndefined();
    // null and non-finite ids are ids like any other.
    p.add(null, "x", null);
    p.add(Infinity, "y", null);
    expect([p.take(null)?.method, p.take(Infinity)?.method, p.size]).toEqual(["x", "y", 1]);
  });
});
