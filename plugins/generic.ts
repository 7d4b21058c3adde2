/**
 * Generic HTTP/gRPC pack: classifies any agent's error text by the status words and codes
 * that every backend shares. Matches text and JSON-RPC errors, never raw log lines (a log
 * full of retried 429s is not a cause by itself). Written with the public plugin API.
 */
import { defineAnchor, definePlugin } from "../lib/plugin.ts";
import type { Category } from "../lib/outcome.ts";
import { inputText } from "../lib/anchors.ts";

/** One category rule: the first pattern that matches gives the category. */
interface Rule {
  id: string;
  category: Category;
  priority: number;
  pattern: RegExp;
}

const RULES: Rule[] = [
  {
    id: "generic.quota",
    category: "quota",
    priority: 90,
    pattern:
      /individual quota|quota (?:reached|exceeded|exhausted)|check quota|exceeded your current quota|insufficient_quota|usage limit|spend limit|credit balance is too low|billing|QUOTA_EXHAUSTED|\b402\b/i,
  },
  {
    id: "generic.rate-limit",
    category: "rate_limit",
    priority: 80,
    pattern: /rate[ _-]?limit|too many requests|\b429\b|RESOURCE_EXHAUSTED/i,
  },
  {
    id: "generic.capacity",
    category: "capacity",
    priority: 70,
    pattern:
      /overloaded|over capacity|no capacity|capacity|\b(?:503|529)\b|UNAVAILABLE|service unavailable/i,
  },
  {
    id: "generic.auth",
    category: "auth",
    priority: 60,
    pattern:
      /\b(?:401|403)\b|UNAUTHENTICATED|PERMISSION_DENIED|unauthori[sz]ed|authentication|invalid api key|api key not valid|not logged in|login required|forbidden/i,
  },
  {
    id: "generic.context",
    category: "context",
    priority: 50,
    pattern:
      /context (?:length|window)|maximum context|prompt is too long|too many tokens|input token count|context_length_exceeded/i,
  },
  {
    id: "generic.model",
    category: "model",
    priority: 40,
    pattern:
      /model (?:not found|unreachable|is not available|does not exist)|unknown model|invalid model|model_not_found|\b404\b.*model|NOT_FOUND/i,
  },
  {
    id: "generic.timeout",
    category: "timeout",
    priority: 30,
    pattern: /DEADLINE_EXCEEDED|timed out|timeout|\b504\b/i,
  },
  {
    id: "generic.network",
    category: "network",
    priority: 20,
    pattern:
      /ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|connection (?:refused|reset|closed)|socket hang up|network error|fetch failed|stream disconnected/i,
  },
];

export default definePlugin({
  anchors: RULES.map((rule) =>
    defineAnchor({
      id: rule.id,
      priority: rule.priority,
      on: ["text", "error"],
      match(input) {
        const text = inputText(input);
        const m = rule.pattern.exec(text);
        if (!m) return null;
        return { cause: text.trim().slice(0, 2000) || m[0], category: rule.category };
      },
    })
  ),
});
