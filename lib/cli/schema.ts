/** `turnguard schema`: prints the Outcome's JSON Schema, derived from the valibot schema. */
import { toJsonSchema } from "@valibot/to-json-schema";
import { OutcomeSchema } from "../core/outcome.ts";
import { parseOptions } from "./args.ts";
import { stdout } from "../io/stdio.ts";

/** Prints the JSON Schema of the Outcome (v1). */
export function schemaCommand(argv: string[]): number {
  parseOptions("schema", argv, {});
  const schema = {
    $id: "https://turnguard.dev/schema/outcome-v1.json",
    title: "turnguard Outcome v1",
    ...toJsonSchema(OutcomeSchema(), { errorMode: "ignore" }),
  };
  stdout.write(JSON.stringify(schema, null, 2) + "\n");
  return 0;
}
