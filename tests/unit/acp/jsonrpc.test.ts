/**
 * Reading one JSON-RPC line (lib/acp/jsonrpc.ts): `parseMessage` and request id keys.
 */
import { describe, expect, test } from "bun:test";
import { idKey, parseMessage } from "../../../lib/acp/jsonrpc.ts";
import { enc } from "../../helpers/units.ts";

describe("parseMessage", () => {
  test.each(
    [
      ['{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"a":1}}\n', {
        kind: "request",
        id: 1,
        method: "session/prompt",
        params: { a: 1 },
      }],
      ['{"jsonrpc":"2.0","id":"x","method":"m"}', {
        kind: "request",
        id: "x",
        method: "m",
        params: undefined,
      }],
      ['{"jsonrpc":"2.0","method":"session/update","params":{}}\r\n', {
        kind: "notification",
        method: "session/update",
        params: {},
      }],
      ['{"jsonrpc":"2.0","id":3,"result":null}', {
        kind: "result",
        id: 3,
        result: null,
        raw: { jsonrpc: "2.0", id: 3, result: null },
      }],
      ['{"jsonrpc":"2.0","id":null,"error":{"code":1}}', {
        kind: "error",
        id: null,
        error: { code: 1 },
        raw: { jsonrpc: "2.0", id: null, error: { code: 1 } },
      }],
      ["[1,2]", null],
      ["not json", null],
      ["", null],
      ['{"id":{"x":1},"method":"m"}', null],
      ['{"id":1}', null],
    ] as const,
  )("%j", (line, expected) => {
    expect(parseMessage(enc(line))).toEqual(expected as never);
  });

  test('ids 1 and "1" are different keys', () => {
    expect(idKey(1)).not.toBe(idKey("1"));
  });
});
