import { describe, expect, test } from "bun:test";
import { capUtf8, dewrapGlog, utf8Length } from "../../../lib/text/text.ts";

describe("capUtf8", () => {
  test("400 × é is cut to at most 500 bytes of valid UTF-8", () => {
    const capped = capUtf8("é".repeat(400), 500);
    expect(utf8Length(capped)).toBe(500);
    expect(capped).toBe("é".repeat(250));
  });
  test("never splits a 3- or 4-byte character", () => {
    expect(capUtf8("a" + "€".repeat(10), 6)).toBe("a€");
    expect(capUtf8("😀😀", 7)).toBe("😀");
    expect(capUtf8("short", 500)).toBe("short");
  });
});

describe("dewrapGlog", () => {
  const q = "RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s";
  test("removes the self-wrapped duplicate tail", () => {
    expect(dewrapGlog(`agent executor error: model unreachable: ${q}.: model unreachable: ${q}.`))
      .toBe(`agent executor error: model unreachable: ${q}.`);
    const e = "RESOURCE_EXHAUSTED (code 429): Resource has been exhausted (e.g. check quota)";
    expect(dewrapGlog(`${e}.: ${e}.`)).toBe(`${e}.`);
  });
  test("leaves a seam alone when the tail is not a repeat", () => {
    const s = "failed to load config.: permission denied";
    expect(dewrapGlog(s)).toBe(s);
  });
});
