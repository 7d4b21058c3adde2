/**
 * Rewritten responses (lib/proxy/rewrite.ts): annotated errors, fresh errors, code kinds.
 */
import { describe, expect, test } from "bun:test";
import {
  annotateError,
  errorResponse,
  isHttpStatusCode,
  isJsonRpcCode,
} from "../../../lib/proxy/rewrite.ts";

describe("rewrites", () => {
  const tg = { status: "failed", category: "rate_limit", message: "slow down", retry: null };
  test.each([
    ["data absent: created", { code: 429, message: "raw" }, false, {
      code: 429,
      message: "raw",
      data: { turnguard: tg },
    }],
    ["object data: member added", { code: 429, message: "raw", data: { a: 1 } }, false, {
      code: 429,
      message: "raw",
      data: { a: 1, turnguard: tg },
    }],
    ["string data: left alone", { code: 429, message: "raw", data: "s" }, false, {
      code: 429,
      message: "raw",
      data: "s",
    }],
    ["null data: left alone", { code: 429, message: "raw", data: null }, false, {
      code: 429,
      message: "raw",
      data: null,
    }],
    ["rewrite: HTTP code and message replaced", { code: 429, message: "raw" }, true, {
      code: -32603,
      message: "slow down",
      data: { turnguard: { ...tg, originalCode: 429, originalMessage: "raw" } },
    }],
    ["rewrite: JSON-RPC code kept", { code: -32000, message: "raw" }, true, {
      code: -32000,
      message: "slow down",
      data: { turnguard: { ...tg, originalMessage: "raw" } },
    }],
    ["rewrite: string code replaced", { code: "E429", message: "slow down" }, true, {
      code: -32603,
      message: "slow down",
      data: { turnguard: { ...tg, originalCode: "E429" } },
    }],
  ])("%s", (_name, error, rewrite, expected) => {
    const response = { jsonrpc: "2.0", id: 4, error, extra: true };
    expect(annotateError(response, tg, rewrite)).toEqual({
      jsonrpc: "2.0",
      id: 4,
      error: expected,
      extra: true,
    });
  });

  test("a fresh error response", () => {
    expect(errorResponse("x", "m", { status: "failed" })).toEqual({
      jsonrpc: "2.0",
      id: "x",
      error: { code: -32603, message: "m", data: { turnguard: { status: "failed" } } },
    });
  });

  test.each([
    [429, true, false],
    [503, true, false],
    [-32603, false, true],
    [0, false, true],
    [600, false, true],
    [42.5, false, false],
    ["429", false, false],
  ])(
    "code %j: HTTP status %j, JSON-RPC code %j",
    (code, http, rpc) => {
      expect([isHttpStatusCode(code), isJsonRpcCode(code)]).toEqual([http, rpc]);
    },
  );
});
