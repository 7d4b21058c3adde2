/**
 * The proxy-chain envelope (lib/acp/successor.ts), both generations: the RFD's
 * (agentclientprotocol/agent-client-protocol, docs/rfds/proxy-chains.mdx) and
 * @thinkwell/conductor 0.5.7's (dist/conductor.js, @thinkwell/protocol dist/proxy-protocol.js).
 */
import { describe, expect, test } from "bun:test";
import { type Message, toMessage } from "../../../lib/acp/jsonrpc.ts";
import { acceptedInit, proxyInitOf, unwrap, wrap } from "../../../lib/acp/successor.ts";

const msg = (value: unknown): Message => toMessage(value)!;

describe("proxyInitOf", () => {
  test.each([
    [{ id: 1, method: "proxy/initialize", params: { protocolVersion: 1 } }, "rfd"],
    [{ id: 1, method: "initialize", params: { _meta: { proxy: true } } }, "meta"],
    [{ id: 1, method: "initialize", params: { _meta: { proxy: "yes" } } }, null],
    [{ id: 1, method: "initialize", params: { protocolVersion: 1 } }, null],
    [{ method: "proxy/initialize", params: {} }, null],
    [{ id: 1, method: "session/new", params: { _meta: { proxy: true } } }, null],
  ])("%j → %p", (value, want) => {
    expect(proxyInitOf(msg(value))).toBe(want as never);
  });
});

describe("unwrap", () => {
  test.each([
    [
      { id: 7, method: "proxy/successor", params: { method: "session/update", params: { a: 1 } } },
      { kind: "request", id: 7, method: "session/update", params: { a: 1 } },
    ],
    [
      { method: "proxy/successor", params: { method: "n", params: [1], meta: { x: 1 } } },
      { kind: "notification", method: "n", params: [1] },
    ],
    [
      { id: "a", method: "_proxy/successor/request", params: { method: "m" } },
      { kind: "request", id: "a", method: "m", params: undefined },
    ],
    [
      { method: "_proxy/successor/notification", params: { method: "m", params: null } },
      { kind: "notification", method: "m", params: null },
    ],
    // The npm names are bound to their kind; a method that is no string is no envelope.
    [{ method: "_proxy/successor/request", params: { method: "m" } }, null],
    [{ id: 1, method: "_proxy/successor/notification", params: { method: "m" } }, null],
    [{ id: 1, method: "proxy/successor", params: { method: 3 } }, null],
    [{ id: 1, method: "session/prompt", params: { method: "m" } }, null],
    [{ id: 1, result: { method: "m" } }, null],
  ])("%j", (value, want) => {
    expect(unwrap(msg(value))).toEqual(want as never);
  });
});

describe("wrap", () => {
  test("each generation's names, params left out when there are none", () => {
    expect(wrap("rfd", "t-1", "initialize", { p: 1 })).toEqual({
      jsonrpc: "2.0",
      id: "t-1",
      method: "proxy/successor",
      params: { method: "initialize", params: { p: 1 } },
    });
    expect(wrap("rfd", undefined, "n", undefined)).toEqual({
      jsonrpc: "2.0",
      method: "proxy/successor",
      params: { method: "n" },
    });
    expect(wrap("meta", 3, "m", [])).toEqual({
      jsonrpc: "2.0",
      id: 3,
      method: "_proxy/successor/request",
      params: { method: "m", params: [] },
    });
    expect(wrap("meta", undefined, "n", null)).toEqual({
      jsonrpc: "2.0",
      method: "_proxy/successor/notification",
      params: { method: "n", params: null },
    });
  });

  test("unwrap undoes wrap", () => {
    for (const generation of ["rfd", "meta"] as const) {
      expect(unwrap(msg(wrap(generation, 9, "m", { a: [1] })))).toEqual({
        kind: "request",
        id: 9,
        method: "m",
        params: { a: [1] },
      });
    }
  });
});

describe("acceptedInit", () => {
  test("meta: _meta.proxy true added, the rest kept; rfd: as it is", () => {
    const result = { protocolVersion: 1, _meta: { other: 2 } };
    expect(acceptedInit("meta", result)).toEqual({
      protocolVersion: 1,
      _meta: { other: 2, proxy: true },
    });
    expect(acceptedInit("meta", null)).toEqual({ _meta: { proxy: true } });
    expect(acceptedInit("rfd", result)).toBe(result);
  });
});
