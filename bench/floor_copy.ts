/**
 * Floor of `turnguard proxy -- AGENT`: a compiled Bun program that spawns AGENT and copies
 * stdin to the agent and the agent's stdout to stdout with Bun-native I/O, reading nothing.
 * The least any program between a client and an agent must do.
 */
import { bun } from "../lib/io/bun_api.ts";

const command = process.argv.slice(2);
const child = bun!.spawn(command, { stdin: "pipe", stdout: "pipe", stderr: "inherit" });

async function toAgent(): Promise<void> {
  try {
    for await (const chunk of bun!.stdin.stream()) {
      child.stdin.write(chunk);
      await child.stdin.flush();
    }
    await child.stdin.end();
  } catch { /* the agent is gone */ }
}

async function toClient(): Promise<void> {
  for await (const chunk of child.stdout) await bun!.write(bun!.stdout, chunk);
}

void toAgent();
await toClient();
process.exit(await child.exited);
