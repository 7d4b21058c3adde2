import { describe, expect, test } from "bun:test";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { echoOutput, printfOutput, unwrapPrintedPublish } from "../../../lib/publish/unwrap.ts";

const detectors = builtinPlugins().detectors.filter((d) => d.id === "buzz");
const unwrap = (text: string, channel: string | null = "C1") => {
  const diagnostics: string[] = [];
  return { text: unwrapPrintedPublish(text, detectors, channel, diagnostics), diagnostics };
};
const MEANT = "publish: the reply was a printed buzz command; publishing the content it meant";

describe("printf and echo, as the shell would print them", () => {
  const printf: Array<[string[], string]> = [
    [["%s", "hello world"], "hello world"],
    [["line one\\nline two\\n"], "line one\nline two\n"],
    [["%s|%s\\n", "a", "b", "c"], "a|b\nc|\n"],
    [["100%% sure: %b", "x\\ty"], "100% sure: x\ty"],
    [["--", "%s", "dash"], "dash"],
    [[], ""],
  ];
  for (const [args, want] of printf) {
    test(`printf ${JSON.stringify(args)}`, () => expect(printfOutput(args)).toBe(want));
  }
  test("printf -v prints nothing knowable", () =>
    expect(printfOutput(["-v", "x", "%s"])).toBeNull());

  const echo: Array<[string[], string]> = [
    [["a", "b"], "a b\n"],
    [["-n", "a"], "a"],
    [["-e", "a\\nb"], "a\nb\n"],
    [["a\\nb"], "a\\nb\n"],
    [["-ne", "x\\ty"], "x\ty"],
  ];
  for (const [args, want] of echo) {
    test(`echo ${JSON.stringify(args)}`, () => expect(echoOutput(args)).toBe(want));
  }
});

describe("unwrapPrintedPublish — the content the agent meant", () => {
  test("a fenced bash block with --content", () => {
    const text =
      "I'll post it:\n\n```bash\nbuzz messages send --channel C1 --reply-to E1 --content \"The answer is 42.\nSecond line with 'quotes'.\"\n```\n";
    expect(unwrap(text)).toEqual({
      text: "The answer is 42.\nSecond line with 'quotes'.",
      diagnostics: [MEANT],
    });
  });

  test("--content=VALUE", () => {
    expect(unwrap("```sh\nbuzz messages send --channel=C1 --content='short'\n```").text).toBe(
      "short",
    );
  });

  test("a here-document piped through --content -", () => {
    const text =
      "buzz messages send --channel C1 --content - <<'EOF'\n# Title\n\nBody with $dollars and `ticks`.\nEOF\n";
    expect(unwrap(text).text).toBe("# Title\n\nBody with $dollars and `ticks`.");
  });

  test("cat <<EOF | buzz …", () => {
    const text =
      "```\ncat <<'MSG' | buzz messages send --channel C1 --content -\nhi there\nMSG\n```";
    expect(unwrap(text).text).toBe("hi there");
  });

  test("printf '…' | buzz …", () => {
    expect(unwrap("printf 'line1\\nline2' | buzz messages send --channel C1 --content -").text)
      .toBe("line1\nline2");
    expect(unwrap("echo 'it works' | buzz messages send --content -").text).toBe("it works");
  });

  test("a here-string", () => {
    expect(unwrap(`buzz messages send --channel C1 --content - <<< "via here-string"`).text).toBe(
      "via here-string",
    );
  });

  test("a console block with $ prompts", () => {
    expect(
      unwrap("```console\n$ buzz messages send --channel C1 --content 'from console'\n```").text,
    )
      .toBe("from console");
  });

  test("the last printed publish wins", () => {
    const text = "```bash\nbuzz messages send --channel C1 --content first\n```\n" +
      "```bash\nbuzz messages send --channel C1 --content second\n```";
    expect(unwrap(text).text).toBe("second");
  });

  test("an ordinary answer is left as it is", () => {
    for (
      const text of [
        "The answer is 42.",
        "Use `buzz messages send` to post.",
        "```python\nprint('buzz messages send --channel C1 --content x')\n```",
        "```bash\nbuzz messages get --channel C1\n```",
      ]
    ) {
      expect(unwrap(text)).toEqual({ text, diagnostics: [] });
    }
  });

  test("an example for another channel, or with no channel inside prose, is left as it is", () => {
    const other = "To post, run:\n```bash\nbuzz messages send --channel <uuid> --content 'hi'\n```";
    expect(unwrap(other).text).toBe(other);
    const noChannel = "To post, run:\n```bash\nbuzz messages send --content 'hi'\n```";
    expect(unwrap(noChannel).text).toBe(noChannel);
  });

  test("with no channel flag, a block that is all the text is unwrapped", () => {
    expect(unwrap("```bash\nbuzz messages send --content 'just this'\n```\n").text).toBe(
      "just this",
    );
  });

  test("content only a shell could know: the text is sent as it is", () => {
    const text = 'buzz messages send --channel C1 --content "$(cat reply.md)"';
    expect(unwrap(text)).toEqual({
      text,
      diagnostics: [
        "publish: the reply is a printed publish command whose content cannot be read; publishing the text as it is",
      ],
    });
  });
});
