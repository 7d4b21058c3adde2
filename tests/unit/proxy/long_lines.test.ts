/**
 * Lines too long to read (lib/proxy/long_lines.ts): their first PREFIX_BYTES are kept and
 * say what the line is.
 */
import { describe, expect, test } from "bun:test";
import { PREFIX_BYTES } from "../../../lib/acp/prefix.ts";
import {
  idLexemeOf,
  keepPrefix,
  newLong,
  type PrefixKind,
  prefixKind,
} from "../../../lib/proxy/long_lines.ts";
import { enc } from "../../helpers/units.ts";

describe("keepPrefix", () => {
  test("scans once PREFIX_BYTES came, and only once", () => {
    const long = newLong();
    const head = `{"jsonrpc":"2.0","id":"a","method":"x","params":{"p":"`;
    expect(keepPrefix(long, enc(head), false)).toBeNull();
    const fill = enc("y".repeat(PREFIX_BYTES));
    const scanned = keepPrefix(long, fill, false);
    expect(scanned?.text.length).toBe(PREFIX_BYTES);
    expect(prefixKind(scanned?.scan ?? null)).toEqual({
      kind: "request",
      id: "a",
      idLexeme: '"a"',
      method: "x",
    });
    expect(keepPrefix(long, fill, true)).toBeNull();
  });

  test("a line that ends sooner is scanned at its end", () => {
    const long = newLong();
    const scanned = keepPrefix(long, enc('{"jsonrpc":"2.0","id":3,"error":{}}\n'), true);
    expect(prefixKind(scanned?.scan ?? null)).toEqual({ kind: "response", id: 3, isError: true });
  });
});

test.each<[string, PrefixKind]>([
  ['{"id":1,"result":', { kind: "response", id: 1, isError: false }],
  ['{"method":"session/update","params":', { kind: "other" }],
  ['{"id":1,"method":"session/prompt"', {
    kind: "request",
    id: 1,
    idLexeme: "1",
    method: "session/prompt",
  }],
  ["not json", { kind: "other" }],
])("prefixKind of %j", (text, kind) => {
  const long = newLong();
  expect(prefixKind(keepPrefix(long, enc(text), true)?.scan ?? null)).toEqual(kind);
});

test("prefixKind of nothing scanned yet is other", () => {
  expect(prefixKind(null)).toEqual({ kind: "other" });
});

test("idLexemeOf keeps the id as the line writes it", () => {
  expect(idLexemeOf(enc('{"id":1.0,"method":"x"}'), 1)).toBe("1.0");
  expect(idLexemeOf(enc('{"id":2,"method":"x"}'), 1)).toBe("1");
});
