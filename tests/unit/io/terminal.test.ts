/**
 * lib/terminal.ts: stdin is a terminal exactly when isatty(0) says so, whether the answer
 * comes from fstat (a pipe, a file, /dev/null) or from node:tty (a pseudo-terminal), under
 * Bun and Deno.
 */
import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { BUN, DENO, ROOT } from "../../helpers/cli.ts";

const PROBE = `import { stdinIsTerminal } from ${JSON.stringify(join(ROOT, "lib/io/terminal.ts"))};
import { isatty } from "node:tty";
console.log(JSON.stringify([stdinIsTerminal(), isatty(0)]));`;

const RUNTIMES = {
  bun: [BUN, "-e", PROBE],
  deno: [DENO, "eval", PROBE],
} as const;

/** [stdinIsTerminal(), isatty(0)] in a process whose stdin is `stdin`. */
function probe(argv: readonly string[], stdin: "pipe" | "ignore" | number): [boolean, boolean] {
  const r = spawnSync(argv[0], argv.slice(1), { stdio: [stdin, "pipe", "inherit"], input: "" });
  return JSON.parse(r.stdout.toString().trim().split("\n").at(-1)!);
}

describe("stdinIsTerminal", () => {
  for (const [runtime, argv] of Object.entries(RUNTIMES)) {
    test(`a pipe and /dev/null are not terminals (${runtime})`, () => {
      expect(probe(argv, "pipe")).toEqual([false, false]);
      expect(probe(argv, "ignore")).toEqual([false, false]); // /dev/null
    });

    test.skipIf(!existsSync("/usr/bin/script"))(
      `a pseudo-terminal is one (${runtime})`,
      () => {
        // script(1) runs the probe with a new pseudo-terminal as its stdin.
        const quoted = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
        const r = spawnSync("/usr/bin/script", ["-qec", quoted, "/dev/null"], {
          stdio: ["pipe", "pipe", "inherit"],
          input: "",
        });
        const last = r.stdout.toString().trim().split(/\r?\n/).at(-1)!;
        expect(JSON.parse(last)).toEqual([true, true]);
      },
    );
  }
});
