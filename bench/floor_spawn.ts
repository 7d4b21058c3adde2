/**
 * Floor of `turnguard run -- CMD`: a compiled Bun program that spawns CMD, copies its stdout
 * and stderr to its own (Bun-native I/O, every byte, in order) and exits with its status.
 */
const command = process.argv.slice(2);
const child = Bun.spawn(command, { stdin: "inherit", stdout: "pipe", stderr: "pipe" });

async function copy(from: ReadableStream<Uint8Array>, to: typeof Bun.stdout): Promise<void> {
  for await (const chunk of from) await Bun.write(to, chunk);
}

await Promise.all([copy(child.stdout, Bun.stdout), copy(child.stderr, Bun.stderr)]);
process.exit(await child.exited);
