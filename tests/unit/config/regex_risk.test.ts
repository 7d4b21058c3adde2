import { describe, expect, test } from "bun:test";
import { regexRisk } from "../../../lib/config/regex_risk.ts";

describe("regexRisk", () => {
  const risky = [
    "(a+)+$",
    "(\\w+\\s?)*$",
    "(?:.*,)+x",
    "^(?<cause>(?:[a-z]+ )*)failed$",
    "(a{2,})*",
    "((a+))+",
    "(x|y+){2,}",
  ];
  const safe = [
    "llm-gateway: (?<cause>budget exhausted for team=.*)$",
    "(a|b)+",
    "[(]a+[)]+",
    "\\(a+\\)+",
    "(a{2})+",
    "(?:a+)?",
    "(?:a+){1}",
    "RESOURCE_EXHAUSTED \\(code (\\d+)\\)",
    "[+*]+",
  ];
  for (const source of risky) {
    test(`${source}: risky`, () => {
      expect(regexRisk(source)).toContain("may take exponential time");
    });
  }
  for (const source of safe) {
    test(`${source}: no risk seen`, () => expect(regexRisk(source)).toBeNull());
  }
  test("it names the group that repeats", () => {
    expect(regexRisk("x(?:y(a+))+")).toStartWith("the group at character 2 repeats (+)");
  });
});
