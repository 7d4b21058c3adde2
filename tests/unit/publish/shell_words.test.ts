import { describe, expect, test } from "bun:test";
import { backslashEscapes, effectiveArgv, parseShell } from "../../../lib/publish/shell_words.ts";
import { simpleCommands } from "../../../lib/publish/commands.ts";

/** The argv lists of every pipeline, pipelines as arrays of commands. */
const argvs = (src: string) => parseShell(src).map((p) => p.map((c) => c.argv));

describe("parseShell — words and quotes", () => {
  const rows: Array<[string, string[][][]]> = [
    ["buzz messages send", [[["buzz", "messages", "send"]]]],
    ["  a   b\tc  ", [[["a", "b", "c"]]]],
    [`echo 'single "quoted" $x'`, [[["echo", 'single "quoted" $x']]]],
    [`echo "double 'quoted' \\"esc\\" \\$x \\\\ \\q"`, [[[
      "echo",
      `double 'quoted' "esc" $x \\ \\q`,
    ]]]],
    [`echo a\\ b \\"c`, [[["echo", "a b", '"c']]]],
    [`echo ''`, [[["echo", ""]]]],
    [`echo ab'cd'"ef"`, [[["echo", "abcdef"]]]],
    [`echo $'a\\nb\\t\\'c'`, [[["echo", "a\nb\t'c"]]]],
    [`echo "$(buzz messages send --x "y")" done`, [[[
      "echo",
      '$(buzz messages send --x "y")',
      "done",
    ]]]],
    ["echo `date` $HOME ${X:-y}", [[["echo", "`date`", "$HOME", "${X:-y}"]]]],
    ["echo 'unterminated", [[["echo", "unterminated"]]]],
    [`echo "unterminated`, [[["echo", "unterminated"]]]],
    ["a # comment; b", [[["a"]]]],
    ["a#b", [[["a#b"]]]],
    ["line \\\ncontinued", [[["line", "continued"]]]],
    ["", []],
  ];
  for (const [src, want] of rows) {
    test(JSON.stringify(src), () => expect(argvs(src)).toEqual(want));
  }
});

describe("parseShell — operators", () => {
  const rows: Array<[string, string[][][]]> = [
    ["printf '%s' hi | buzz messages send --content -", [[["printf", "%s", "hi"], [
      "buzz",
      "messages",
      "send",
      "--content",
      "-",
    ]]]],
    ["a && b || c; d & e", [[["a"]], [["b"]], [["c"]], [["d"]], [["e"]]]],
    ["a|b|&c", [[["a"], ["b"], ["c"]]]],
    ["a\nb", [[["a"]], [["b"]]]],
    ["(cd x && buzz messages send)", [[["cd", "x"]], [["buzz", "messages", "send"]]]],
    ["a;;b", [[["a"]], [["b"]]]],
    ["echo 'a|b;c&&d'", [[["echo", "a|b;c&&d"]]]],
  ];
  for (const [src, want] of rows) {
    test(JSON.stringify(src), () => expect(argvs(src)).toEqual(want));
  }
});

describe("parseShell — redirections and here-documents", () => {
  test("file redirections are not words", () => {
    const [[cmd]] = parseShell("buzz send >out.txt 2>&1 <in &>>log");
    expect(cmd.argv).toEqual(["buzz", "send"]);
    expect(cmd.redirects.map((r) => [r.fd, r.op, r.target])).toEqual([
      ["", ">", "out.txt"],
      ["2", ">&", "1"],
      ["", "<", "in"],
      ["", "&>>", "log"],
    ]);
  });

  test("a here-document's body is read after its line", () => {
    const src =
      "buzz messages send --content - <<'EOF' && echo ok\nline one\n  line 'two' $x\nEOF\necho after";
    const pipelines = parseShell(src);
    expect(pipelines.map((p) => p.map((c) => c.argv))).toEqual([
      [["buzz", "messages", "send", "--content", "-"]],
      [["echo", "ok"]],
      [["echo", "after"]],
    ]);
    expect(pipelines[0][0].redirects[0]).toEqual({
      op: "<<",
      fd: "",
      target: "EOF",
      body: "line one\n  line 'two' $x\n",
    });
  });

  test("<<- strips leading tabs; an unclosed here-document takes the rest", () => {
    const [[a]] = parseShell("cat <<-END\n\tindented\n\tEND\n");
    expect(a.redirects[0].body).toBe("indented\n");
    const [[b]] = parseShell("cat <<END\nno end");
    expect(b.redirects[0].body).toBe("no end\n");
  });

  test("here-string", () => {
    const [[cmd]] = parseShell(`buzz messages send <<< "the reply"`);
    expect(cmd.argv).toEqual(["buzz", "messages", "send"]);
    expect(cmd.redirects[0]).toEqual({ op: "<<<", fd: "", target: "the reply" });
  });
});

describe("backslashEscapes", () => {
  const rows: Array<[string, string]> = [
    ["a\\nb", "a\nb"],
    ["\\t\\\\\\'\\\"", "\t\\'\""],
    ["\\x41\\101\\0101", "AAA"],
    ["\\q", "\\q"],
    ["trailing\\", "trailing\\"],
  ];
  for (const [src, want] of rows) {
    test(JSON.stringify(src), () => expect(backslashEscapes(src)).toBe(want));
  }
});

describe("effectiveArgv — what actually runs", () => {
  const rows: Array<[string[], string[]]> = [
    [["buzz", "x"], ["buzz", "x"]],
    [["FOO=1", "BAR=2", "buzz", "x"], ["buzz", "x"]],
    [["env", "-i", "A=1", "buzz", "x"], ["buzz", "x"]],
    [["env", "-u", "HOME", "buzz"], ["buzz"]],
    [["command", "buzz"], ["buzz"]],
    [["command", "-v", "buzz"], []],
    [["nohup", "exec", "buzz"], ["buzz"]],
    [["timeout", "-k", "5", "30s", "buzz"], ["buzz"]],
    [["sudo", "-u", "bot", "buzz"], ["buzz"]],
    [["if", "!", "buzz"], ["buzz"]],
    [["{", "buzz"], ["buzz"]],
    [["echo", "FOO=1"], ["echo", "FOO=1"]],
  ];
  for (const [argv, want] of rows) {
    test(argv.join(" "), () => expect(effectiveArgv(argv)).toEqual(want));
  }
});

describe("simpleCommands — shell wrappers are opened", () => {
  const rows: Array<[string | string[], string[][]]> = [
    [["bash", "-lc", "cd /x && buzz messages send --channel C"], [["cd", "/x"], [
      "buzz",
      "messages",
      "send",
      "--channel",
      "C",
    ]]],
    [`sh -c 'bash -c "buzz messages send"'`, [["buzz", "messages", "send"]]],
    [["/usr/bin/env", "buzz", "x"], [["buzz", "x"]]],
    [`eval "buzz messages send"`, [["buzz", "messages", "send"]]],
    [["bash", "script.sh"], [["bash", "script.sh"]]],
    [["buzz", "messages", "send", "a b"], [["buzz", "messages", "send", "a b"]]],
  ];
  for (const [src, want] of rows) {
    test(JSON.stringify(src), () => expect(simpleCommands(src).map((c) => c.argv)).toEqual(want));
  }
});
