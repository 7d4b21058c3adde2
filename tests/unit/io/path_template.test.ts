/**
 * Path templates (lib/io/path_template.ts): variables with nested defaults, an unset
 * variable is a problem (never ""), the working directory in the forms agents name their
 * folders with, `{session}`, and the syntax errors `check` reports.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  cwdForm,
  expandTemplate,
  parseTemplate,
  type TemplateContext,
  templateNeeds,
} from "../../../lib/io/path_template.ts";
import { expandPatterns } from "../../../lib/io/glob.ts";
import { templateProblem } from "../../../lib/config/config.ts";

const sha256 = (t: string) => createHash("sha256").update(t).digest("hex");
const ctx = (over: Partial<TemplateContext> = {}): TemplateContext => ({
  env: { HOME: "/home/me" },
  cwd: "/home/me/my.app",
  session: "0a1b2c3d-4e5f",
  sha256,
  ...over,
});
const path = (t: string, c = ctx()) => expandTemplate(t, c).path;

describe("path templates", () => {
  test("variables: $VAR, ${VAR}, defaults that nest, ~", () => {
    expect(path("$HOME/x")).toBe("/home/me/x");
    expect(path("${HOME}/x")).toBe("/home/me/x");
    expect(path("~/x")).toBe("/home/me/x");
    expect(path("${A:-${B:-$HOME/.b}}/x")).toBe("/home/me/.b/x");
    expect(path("${A:-${B:-$HOME/.b}}/x", ctx({ env: { HOME: "/h", B: "/bee" } }))).toBe("/bee/x");
    expect(path("${A:-${B:-$HOME/.b}}/x", ctx({ env: { HOME: "/h", A: "/a" } }))).toBe("/a/x");
    expect(path("${A:-}/x")).toBe("/x");
    expect(path("cost$")).toBe("cost$");
    expect(path("/x/}")).toBe("/x/}");
  });

  test("an unset variable without a default is a problem naming it, never ''", () => {
    const r = expandTemplate("$MY_DIR/logs/*.log", ctx());
    expect(r.path).toBeNull();
    expect(r.problem).toContain("$MY_DIR is not set");
    expect(expandTemplate("${MY_DIR:-${ALSO}}/x", ctx()).problem).toContain("$ALSO is not set");
    // HOME unset falls back to the account's home
    expect(path("$HOME/x", ctx({ env: {}, home: "/acct" }))).toBe("/acct/x");
    expect(path("~/x", ctx({ env: {}, home: "/acct" }))).toBe("/acct/x");
  });

  test("{cwd} forms: as is, Claude Code's, pi's, dashes, gemini's hash", () => {
    expect(path("/p/{cwd}/s")).toBe("/p//home/me/my.app/s");
    // Claude Code: non-alphanumerics -> "-" (~/.claude/projects/-home-me-my-app)
    expect(path("$HOME/.claude/projects/{cwd:alnum}/{session}.jsonl")).toBe(
      "/home/me/.claude/projects/-home-me-my-app/0a1b2c3d-4e5f.jsonl",
    );
    // pi: --<cwd without its leading "/", "/" -> "-">--
    expect(cwdForm("pi", { cwd: "/home/me/my.app" })).toBe("--home-me-my.app--");
    expect(cwdForm("pi", { cwd: "C:\\work\\x" })).toBe("--C--work-x--");
    expect(cwdForm("dash", { cwd: "/home/me/my.app" })).toBe("-home-me-my.app");
    expect(path("/t/{cwd:sha256}")).toBe(`/t/${sha256("/home/me/my.app")}`);
    expect(expandTemplate("/t/{cwd}", ctx({ cwd: undefined })).problem).toContain("{cwd}");
  });

  test("{session} and {session:N}; not known: a problem", () => {
    expect(path("/s/{session:8}.jsonl")).toBe("/s/0a1b2c3d.jsonl");
    expect(expandTemplate("/s/{session}", ctx({ session: undefined })).problem).toContain(
      "{session}",
    );
  });

  test("syntax: unclosed ${, unknown placeholders and forms, bad N", () => {
    for (
      const [t, words] of [
        ["${HOME/x", "never closed"],
        ["${A:-${B}/x", "never closed"],
        ["/x/{cwdd}", "unknown placeholder"],
        ["/x/{cwd:md5}", "unknown form"],
        ["/x/{session:0}", "positive whole number"],
        ["${}", "variable name"],
      ] as const
    ) {
      expect(() => parseTemplate(t)).toThrow(words);
    }
    expect(templateNeeds("${A:-$B}/$C/{cwd:pi}/{session}")).toEqual({
      vars: ["B", "C"],
      cwd: true,
      session: true,
    });
  });

  test("config: logs may not name {session}; session_records must", () => {
    expect(templateProblem("$HOME/{session}.log", "logs")).toContain("cannot name {session}");
    expect(templateProblem("$HOME/x.jsonl", "session_records")).toContain("must name {session}");
    expect(templateProblem("$HOME/{cwd:alnum}/{session}.jsonl", "session_records")).toBeNull();
    expect(templateProblem("$HOME/{cwd:nope}/x.log", "logs")).toContain("unknown form");
  });

  test("expandPatterns skips what cannot be expanded, with one problem line each", () => {
    const r = expandPatterns(["$HOME/a", "$NOPE/b", "{cwd:alnum}/c"], {
      env: { HOME: "/h" },
      cwd: "/w/x",
    });
    expect(r.patterns).toEqual(["/h/a", "-w-x/c"]);
    expect(r.problems).toEqual([expect.stringContaining("$NOPE is not set")]);
  });
});
