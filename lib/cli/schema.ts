/** `turnguard schema`: prints the Outcome's JSON Schema, derived from the valibot schema. */
import { toJsonSchema } from "@valibot/to-json-schema";
import { OutcomeSchema } from "../core/outcome.ts";
import { parseOptions } from "./args.ts";
import { stdoutSink } from "../io/output.ts";

/** Prints the JSON Schema of the Outcome (v1). */
export function schemaCommand(argv: string[]): number {
  parseOptions("schema", argv, {});
  const schema = {
    $id: "https://turnguard.dev/schema/outcome-v1.json",
    title: "turnguard Outcome v1",
    ...toJsonSchema(OutcomeSchema(), { errorMode: "ignore" }),
  };
  void stdoutSink.json(schema, 2);
  return 0;
}
