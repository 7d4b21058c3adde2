import { describe, expect, test } from "bun:test";
import { concatBytes, Head, Tail } from "../lib/byte_window.ts";

const enc = (s: string) => new TextEncoder().encode(s);

describe("Tail", () => {
  test("keeps the last bytes and never starts mid-character", () => {
    const t = new Tail(5);
    for (const piece of ["ab", "cé", "€x"]) t.push(enc(piece));
    // bytes: a b c C3 A9 E2 82 AC 78 → last 5 = A9 E2 82 AC 78 → starts mid-é: skip A9
    expect(t.text()).toBe("€x");
  });
  test("a single chunk larger than the limit is cut to the limit", () => {
    const t = new Tail(3);
    t.push(enc("abcdef"));
    expect(t.text()).toBe("def");
  });
});

describe("Head", () => {
  test("keeps the first bytes, drops the rest, never ends mid-character", () => {
    const h = new Head(6);
    for (const piece of ["ab", "c€", "zzz"]) h.push(enc(piece));
    // a b c E2 82 AC | z z z → first 6 = a b c E2 82 AC: whole
    expect(h.text()).toBe("abc€");
    expect(h.truncated).toBe(true);
    const cut = new Head(5);
    cut.push(enc("abc€"));
    expect(cut.text()).toBe("abc");
  });
  test("under the limit nothing is truncated", () => {
    const h = new Head(100);
    h.push(enc("hello"));
    expect([h.text(), h.truncated]).toEqual(["hello", false]);
  });
  test("concatBytes", () => {
    expect(concatBytes([enc("a"), enc("bc")])).toEqual(enc("abc"));
  });
});
