/**
 * Reading one JSON-RPC line (lib/acp/jsonrpc.ts): `parseMessage`, request id keys, and where a
 * batch line's elements lie (`batchElements`).
 */
import { describe, expect, test } from "bun:test";
import { batchElements, batchMessages, idKey, parseMessage } from "../../../lib/acp/jsonrpc.ts";
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

describe("batchElements: a batch's top-level elements, by byte range", () => {
  const rows: [string, string[] | null][] = [
    ["[]", []],
    ["[1]", ["1"]],
    [' [ {"a":"x,]\\"y"} , [1,[2]] ,"s"] \r\n', ['{"a":"x,]\\"y"}', "[1,[2]]", '"s"']],
    ['["\\\\"]', ['"\\\\"']],
    ['[{"a":"}"},{"b":"{"}]', ['{"a":"}"}', '{"b":"{"}']],
    ["[1,]", null],
    ["[,1]", null],
    ["[1", null],
    ['["open', null],
    ["[1] x", null],
    ['{"a":1}', null],
    ["", null],
  ];
  for (const [line, want] of rows) {
    test(JSON.stringify(line), () => {
      const bytes = new TextEncoder().encode(line);
      const got = batchElements(bytes);
      expect(
        got?.map(({ start, end }) => new TextDecoder().decode(bytes.subarray(start, end))) ?? null,
      )
        .toEqual(want);
    });
  }
  test("the elements line up with the parsed batch", () => {
    const line = new TextEncoder().encode(
      '[{"jsonrpc":"2.0","id":1,"method":"a"}, 7, {"jsonrpc":"2.0","method":"b"}]',
    );
    expect(batchElements(line)!.length).toBe(batchMessages(line)!.length);
    expect(batchMessages(line)!.map((m) => m?.kind ?? null)).toEqual([
      "request",
      null,
      "notification",
    ]);
  });
});
