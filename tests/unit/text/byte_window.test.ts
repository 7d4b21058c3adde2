import { describe, expect, test } from "bun:test";
import { concatBytes, Head, Tail } from "../../../lib/text/byte_window.ts";

const enc = (s: string) => new TextEncoder().encode(s);

describe("Tail", () => {
  test("keeps the last bytes and never starts mid-character", () => {
    const t = new Tail(5);
    for (const piece of ["ab", "cé", "€x"]) t.push(enc(piece));
    // bytes: a b c C3 A9 E2 82 AC 78 → last 5 = A9 E2 82 AC 78 → starts mid-é: skip A9
    expect(t.text()).toBe("€x");
  });
  test("a word cut by the window is dropped: a key's tail never stands alone", () => {
    // The window starts inside a key: its suffix would escape every redaction shape.
    const key = "sk-ant-api03-" + "Zq7Xw2Lm9Pk4Rt6Yv1Hn8Bc3".repeat(3);
    const t = new Tail(60);
    t.push(enc(`error: 401 for key ${key} rejected\nquota exceeded`));
    expect(t.text()).toBe(" rejected\nquota exceeded");
    // Whole words are kept when nothing was dropped, and a window that is one cut word
    // is kept as it is (it is all there is).
    const whole = new Tail(60);
    whole.push(enc("a b"));
    expect(whole.text()).toBe("a b");
    const boundary = new Tail(5);
    boundary.push(enc("cut here"));
    expect(boundary.text()).toBe(" here"); // the cut fell between words: nothing dropped
    const json = new Tail(20);
    json.push(enc('{"k":"sk-abcdefghijkl","n":1}'));
    expect(json.text()).toBe('","n":1}');
    const word = new Tail(4);
    word.push(enc("abcdef"));
    expect(word.text()).toBe("cdef");
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
