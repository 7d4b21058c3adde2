/**
 * The text an anchor reads from one input (a log line, a JSON-RPC error, a streamed text),
 * its head only: one place, shared by the declarative anchors, the vocabulary and the packs.
 */
import type { AnchorInput } from "../plugin/api.ts";
import { classifiedHead } from "../text/text.ts";
import { jsonText } from "../text/json.ts";

/** The text an anchor of any kind reads from one input. */
export function inputText(input: AnchorInput): string {
  switch (input.kind) {
    case "log":
      return classifiedHead(input.line);
    case "text":
      return classifiedHead(input.text);
    case "error": {
      const { message, data, code } = input.error;
      const parts = [classifiedHead(typeof message === "string" ? message : jsonText(message))];
      if (data !== undefined) {
        parts.push(classifiedHead(typeof data === "string" ? data : jsonText(data)));
      }
      if (typeof code === "number" || typeof code === "string") parts.push(`(code ${code})`);
      return parts.join(" ");
    }
  }
}
