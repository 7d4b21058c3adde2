/**
 * Whether turnguard's stdin is a terminal, answered without node:tty where `fstat` already
 * knows: node:tty loads node:stream and the Node stream internals (about 2 ms and 7 MiB at
 * every start of a compiled binary), and `run` asks at every turn.
 */
import { fstatSync, statSync } from "node:fs";

/**
 * `isatty(0)`. A terminal is a character device, so a pipe, a file or a socket is not one,
 * nor is /dev/null; node:tty is asked only about another character device.
 */
export function stdinIsTerminal(): boolean {
  let st;
  try {
    st = fstatSync(0);
  } catch {
    return false; // closed: isatty(0) is false too
  }
  if (!st.isCharacterDevice()) return false;
  try {
    const devNull = statSync("/dev/null");
    if (st.rdev === devNull.rdev && st.ino === devNull.ino && st.dev === devNull.dev) return false;
  } catch { /* no /dev/null: ask node:tty */ }
  return process.getBuiltinModule("node:tty").isatty(0);
}
