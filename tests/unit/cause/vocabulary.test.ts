/**
 * The provider vocabulary (vocabulary.toml, lib/cause/vocabulary.ts): every row's documented
 * text, read by `explain` as an agent's error, gives the row's category and retryability;
 * the precedence principles as rows of one table; the stored JSON in step with the file; a
 * bad row is a one-line error naming file, line and key.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { explainInput, vocabularyLine } from "../../../lib/cli/explain.ts";
import { loadRegistry } from "../../../lib/config/registry.ts";
import { buildClassifier, type Classifier } from "../../../lib/cause/classifier.ts";
import { errorCause } from "../../../lib/cause/error_cause.ts";
import { classify, textCause } from "../../../lib/cause/classify.ts";
import { findCause } from "../../../lib/cause/anchors.ts";
import { lookup, normalizeWords, vocabularyRows } from "../../../lib/cause/vocabulary.ts";
import { compileVocabulary, VOCABULARY_JSON } from "../../../lib/config/embedded_config.ts";
import { parseVocabularyText } from "../../../lib/config/vocabulary_file.ts";
import { ConfigError } from "../../../lib/errors.ts";
import type { JsonObject } from "../../../lib/acp/jsonrpc.ts";
import type { Category } from "../../../lib/core/outcome.ts";
import { ROOT } from "../../helpers/cli.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");
let classifier: Classifier;
let genericOnly: Classifier;
beforeAll(async () => {
  // The built-in anchors alone, as `turnguard explain` uses them without --agent.
  const registry = await loadRegistry({ env: {}, cwd: ROOT });
  classifier = buildClassifier(registry.anchors);
  // The generic path alone: no agent pack's anchor helps.
  genericOnly = buildClassifier(registry.anchors.filter((a) => a.id.startsWith("generic.")));
});

describe("every row is a test: its documented text through explain gives its category", () => {
  for (const row of vocabularyRows()) {
    const text = row.sample ?? row.text!;
    test(`${row.id} (${row.of}): ${text.slice(0, 70)} → ${row.category}`, () => {
      // As an agent relays it: a JSON-RPC internal error whose message is the provider's text.
      const line = JSON.stringify({ code: -32603, message: text });
      const { classified } = explainInput(classifier, line, "error", NOW);
      expect(classified?.category).toBe(row.category);
      expect(classified?.retry.retryable).toBe(row.retryable);
    });
  }
});

/** One precedence principle, one evidence, one expected category. */
interface Case {
  principle: string;
  name: string;
  error: JsonObject;
  category: Category;
}

const quota = "You exceeded your current quota, please check your plan and billing details";
const PRECEDENCE: Case[] = [
  {
    principle: "a provider's own code or type outranks its message words",
    name: "Anthropic overloaded_error whose message speaks of a rate limit",
    error: {
      code: -32603,
      message:
        '{"type":"error","error":{"type":"overloaded_error","message":"Rate limit reached for requests"}}',
    },
    category: "capacity",
  },
  {
    principle: "a provider's own code or type outranks its message words",
    name: "OpenAI insufficient_quota under a 429 whose words say rate limit",
    error: {
      code: 429,
      message:
        '{"error":{"message":"Rate limit reached for requests","code":"insufficient_quota"}}',
    },
    category: "quota",
  },
  {
    principle: "a provider's words outrank an HTTP status",
    name: "a 429 whose words say the quota is spent",
    error: { code: 429, message: quota },
    category: "quota",
  },
  {
    principle: "a provider's words outrank an HTTP status",
    name: "OpenAI's overloaded engine under a 429",
    error: {
      code: -32603,
      message: "429 The engine is currently overloaded, please try again later",
    },
    category: "capacity",
  },
  {
    principle: "an HTTP status outranks a wrapper's words",
    name: "an SDK's InternalServerError class carrying a 429",
    error: { code: -32603, message: "InternalServerError: Error code: 429" },
    category: "rate_limit",
  },
  {
    principle: "an HTTP status outranks a wrapper's words",
    name: "LiteLLM's ServiceUnavailableError class with status 401",
    error: { code: 401, message: "litellm.ServiceUnavailableError: upstream said no" },
    category: "auth",
  },
  {
    principle: "a gateway's catch-all 500 never outranks words naming a connection failure",
    name: 'LiteLLM\'s proxy body: APIConnectionError under code "500"',
    error: {
      code: -32603,
      message:
        '{"error":{"message":"litellm.APIConnectionError: OpenAIException - Connection error.","type":null,"param":null,"code":"500"}}',
    },
    category: "network",
  },
  {
    principle: "a gateway's catch-all 500 never outranks words naming a connection failure",
    name: "an agent's status 500 with undici's words",
    error: { code: 500, message: "Internal Server Error: fetch failed" },
    category: "network",
  },
  {
    principle: "a gateway's catch-all 500 never outranks words naming a connection failure",
    name: "HTTP 502 Bad Gateway over Bun's closed socket",
    error: { code: 502, message: "Bad Gateway: The socket connection was closed unexpectedly." },
    category: "network",
  },
  {
    principle: "a gateway's catch-all 500/502 never outranks words naming a quota",
    name: "502 with the quota sentence",
    error: { code: 502, message: `Bad Gateway: ${quota}` },
    category: "quota",
  },
  {
    principle: "a gateway's catch-all 500/502 never outranks words naming an auth failure",
    name: "500 with OpenAI's invalid key sentence",
    error: { code: 500, message: "Internal Server Error: Incorrect API key provided: sk-xx" },
    category: "auth",
  },
  {
    principle: "LiteLLM-style envelopes are unwrapped, even when escaped twice",
    name: "a provider's type escaped twice inside the gateway's message outranks its words",
    error: {
      code: -32603,
      message: JSON.stringify({
        error: {
          message: `litellm.RateLimitError: RateLimitError: AnthropicException - ${
            JSON.stringify(
              JSON.stringify({
                type: "error",
                error: { type: "overloaded_error", message: "Rate limit reached for requests" },
              }),
            )
          }`,
          type: null,
          param: null,
          code: "429",
        },
      }),
    },
    category: "capacity",
  },
  {
    principle: "JSON-RPC data is read whatever its shape; a generic message never hides it",
    name: "Internal error, data a bare string",
    error: { code: -32603, message: "Internal error", data: "Connection error." },
    category: "network",
  },
  {
    principle: "JSON-RPC data is read whatever its shape; a generic message never hides it",
    name: "Internal error, data.details",
    error: { code: -32603, message: "Internal error", data: { details: "fetch failed" } },
    category: "network",
  },
  {
    principle: "JSON-RPC data is read whatever its shape; a generic message never hides it",
    name: "Internal error, data.error nested with a type",
    error: {
      code: -32603,
      message: "Internal error",
      data: { error: { type: "authentication_error", message: "invalid x-api-key" } },
    },
    category: "auth",
  },
  {
    principle: "JSON-RPC data is read whatever its shape; a generic message never hides it",
    name: "Agent error, data under another key",
    error: { code: -32603, message: "Agent error", data: { cause: quota } },
    category: "quota",
  },
  {
    principle: "JSON-RPC data is read whatever its shape; a generic message never hides it",
    name: "a message with words, a provider code in data",
    error: {
      code: -32603,
      message: "Request failed",
      data: { error: { code: "context_length_exceeded", message: "too long" } },
    },
    category: "context",
  },
];

describe("precedence: the most specific evidence wins", () => {
  for (const c of PRECEDENCE) {
    test(`${c.principle}: ${c.name} → ${c.category}`, () => {
      expect(errorCause(c.error, classifier, NOW).cause.error.category).toBe(c.category);
      expect(errorCause(c.error, genericOnly, NOW).cause.error.category).toBe(c.category);
    });
  }

  test("the readable message of data under another key is its words", () => {
    const { cause } = errorCause(
      { code: -32603, message: "Agent error", data: { cause: quota } },
      classifier,
      NOW,
    );
    expect(cause.error.message).toBe(quota);
  });

  test("a cause found elsewhere (stderr, records) is classified by the vocabulary", () => {
    expect(
      classify("error: The socket connection was closed unexpectedly", undefined, classifier, NOW)
        .category,
    )
      .toBe("network");
    expect(classify("Error: Insufficient Balance", undefined, classifier, NOW).category).toBe(
      "quota",
    );
    expect(classify("no words anyone documented", undefined, classifier, NOW).category).toBe(
      "unknown",
    );
  });
});

describe("explain names the signature and its source", () => {
  test("whatever kind the input is read as, even when no anchor reads it", () => {
    const text = "The socket connection was closed unexpectedly.";
    const { e, vocabulary } = explainInput(classifier, text, "text", NOW);
    expect(e.winner).toBeNull();
    expect(vocabulary?.row.id).toBe("bun.connection-closed");
    expect(vocabularyLine(vocabulary)).toBe(
      `vocabulary: bun.connection-closed (Bun, by words) → network  source: ${
        vocabulary!.row.source
      }\n`,
    );
    expect(vocabularyLine(explainInput(classifier, "all good", "text", NOW).vocabulary)).toBe(
      "vocabulary: no signature matches\n",
    );
  });
  // A category alone can come from a generic word rule; these rows' own words must match.
  for (const id of ["vllm.model-not-found", "vllm.context-length", "vllm.max-tokens-too-large"]) {
    test(`a message relayed alone names ${id}`, () => {
      const row = vocabularyRows().find((r) => r.id === id)!;
      const line = JSON.stringify({ code: -32603, message: row.sample ?? row.text! });
      expect(explainInput(classifier, line, "error", NOW).vocabulary?.row.id).toBe(id);
    });
  }
});

describe("words are compared normalized, once", () => {
  test("CamelCase, underscores, spacing and punctuation read alike", () => {
    expect(normalizeWords("ConnectionRefused")).toBe(" connection refused ");
    expect(normalizeWords("connection_refused")).toBe(" connection refused ");
    expect(normalizeWords("  Connection   refused.")).toBe(" connection refused ");
    expect(normalizeWords("APIConnectionError")).toBe(" api connection error ");
  });

  test("one row matches every spelling; whole words only", () => {
    for (const text of ["ConnectionRefused", "connection refused", "CONNECTION_REFUSED"]) {
      expect(lookup({ text })?.row.category).toBe("network");
    }
    expect(lookup({ text: "ECONNREFUSED 127.0.0.1:443" })?.row.id).toBe("node.econnrefused");
    expect(lookup({ text: "the socket connection was closed unexpectedly" })?.row.id).toBe(
      "bun.connection-closed",
    );
    // undici's `terminated` ends a text; `unterminated` is another word.
    expect(lookup({ text: "API Error: terminated" })?.row.id).toBe("undici.terminated");
    expect(lookup({ text: "Unterminated string in JSON at position 12" }, ["words"])).toBeNull();
  });
});

describe("the vocabulary classifies causes; it does not decide that text is a failure", () => {
  const reply =
    'Bun says "The socket connection was closed unexpectedly" when the server hangs up; retry it.';
  test("a model's reply that discusses a runtime's error is no failure of the turn", () => {
    expect(textCause(reply, classifier, NOW, [])).toBeNull();
    expect(findCause(classifier, [{ kind: "text", text: reply }]).finding?.anchor.id ?? "")
      .not.toMatch(/vocabulary/);
  });
  test("the same words as an agent's error are a network failure", () => {
    expect(errorCause({ code: -32603, message: reply }, classifier, NOW).cause.error.category)
      .toBe("network");
  });
});

describe("vocabulary.toml", () => {
  const source = readFileSync(join(ROOT, "vocabulary.toml"), "utf8");

  test("lib/cause/vocabulary.json is vocabulary.toml validated (run `make build` after editing it)", () => {
    expect(JSON.parse(readFileSync(VOCABULARY_JSON, "utf8"))).toEqual(compileVocabulary(source));
  });

  test("every provider, gateway and runtime of the coverage list has rows", () => {
    const of = new Set(vocabularyRows().map((r) => r.of));
    for (
      const name of [
        "OpenAI",
        "Anthropic",
        "Google Gemini",
        "Google Cloud (Vertex AI)",
        "AWS Bedrock",
        "Azure OpenAI",
        "Mistral",
        "xAI",
        "Together",
        "Fireworks",
        "Cohere",
        "DeepSeek",
        "Groq",
        "OpenRouter",
        "Ollama",
        "LiteLLM",
        "Portkey",
        "Bun",
        "Node (undici)",
        "Node (node:http)",
        "Deno",
        "Python (httpx)",
        "Python (requests)",
        "Python (aiohttp)",
        "Rust (reqwest)",
        "Rust (hyper)",
        "Go (net/http)",
        "Java (java.net.http)",
      ]
    ) expect(of.has(name)).toBe(true);
  });

  const row = `[[signature]]
id = "x.one"
of = "X"
speaker = "provider"
text = "x failed"
category = "network"
retryable = true
source = "https://example.com/errors"
`;
  const bad: Array<[string, string, RegExp]> = [
    [
      "an unknown key",
      row.replace('category = "network"', 'category = "network"\ncolour = 1'),
      /^vocabulary\.toml:\d+: signature\[0\]\.colour: unknown key `colour`$/,
    ],
    [
      "a retryable that the category contradicts",
      row.replace("retryable = true", "retryable = false"),
      /^vocabulary\.toml:7: signature\[0\]\.retryable: retryable = false, but a network failure/,
    ],
    [
      "an unknown category",
      row.replace('"network"', '"weather"'),
      /^vocabulary\.toml:6: signature\[0\]\.category: /,
    ],
    [
      "a regex that can take exponential time",
      row.replace('text = "x failed"', 'regex = "(a+)+b"\nsample = "aab"'),
      /^vocabulary\.toml:5: signature\[0\]\.regex: the group at character 1 repeats/,
    ],
    [
      "an invalid regex",
      row.replace('text = "x failed"', 'regex = "(a"\nsample = "a"'),
      /^vocabulary\.toml:5: signature\[0\]\.regex: is not a valid regular expression$/,
    ],
    [
      "a duplicate id",
      row + "\n" + row,
      /^vocabulary\.toml:11: signature\[1\]\.id: id x\.one is also signature\[0\]'s$/,
    ],
    [
      "a row with nothing to match",
      row.replace('text = "x failed"\n', ""),
      /^vocabulary\.toml:1: signature\[0\]: a signature needs at least one of/,
    ],
    [
      "two status-only rows that disagree",
      row.replace('text = "x failed"', 'status = 418\nsample = "418"') + "\n" +
      row.replace('"x.one"', '"x.two"').replace('text = "x failed"', 'status = 418\nsample = "418"')
        .replace('category = "network"', 'category = "auth"').replace(
          "retryable = true",
          "retryable = false",
        ),
      /^vocabulary\.toml:\d+: signature\[1\]\.category: status 418 is network in signature\[0\]/,
    ],
  ];
  for (const [name, text, message] of bad) {
    test(`${name} is a one-line error naming file, line and key`, () => {
      let err: unknown;
      try {
        parseVocabularyText("vocabulary.toml", text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain("\n");
    });
  }
  test("the good row parses, with its line", () => {
    expect(parseVocabularyText("vocabulary.toml", row).signature[0].line).toBe(1);
  });
});
