/**
 * Floor of `turnguard run -- CMD`: a compiled Bun program that spawns CMD, copies its stdout
 * and stderr to its own (Bun-native I/O, every byte, in order) and exits with its status.
 */
import { bun } from "../lib/io/bun_api.ts";

const command = process.argv.slice(2);
const child = bun!.spawn(command, { stdin: "inherit", stdout: "pipe", stderr: "pipe" });

async function copy(from: ReadableStream<Uint8Array>, to: unknown): Promise<void> {
  for await (const chunk of from) await bun!.write(to, chunk);
}

await Promise.all([copy(child.stdout, bun!.stdout), copy(child.stderr, bun!.stderr)]);
process.exit(await child.exited);
