import { describe, expect, test } from "bun:test";
import { escapeControls } from "../../../lib/text/control_chars.ts";
import { redact, redactedJson, SECRET_RULES } from "../../../lib/text/redact.ts";

/** Key bodies built from a fixed alphabet: real-looking shapes, no real secret. */
const B = "Zq7Xw2Lm9Pk4Rt6Yv1Hn8Bc3Df5Gj0Ks";
const body = (n: number, alphabet = B) =>
  alphabet.repeat(Math.ceil(n / alphabet.length)).slice(0, n);

/** [what, secret as an agent would print it, the part that must vanish, the marker kind] */
const CORPUS: [string, string, string, string][] = [
  ["Anthropic", `sk-ant-api03-${body(93)}-${body(6)}AA`, `api03-${body(93)}`, "anthropic"],
  ["Anthropic admin", `sk-ant-admin01-${body(80)}`, body(80), "anthropic"],
  ["OpenAI legacy", `sk-${body(48)}`, body(48), "openai"],
  ["OpenAI project", `sk-proj-${body(40)}_${body(60)}`, body(40), "openai"],
  ["OpenAI service account", `sk-svcacct-${body(64)}`, body(64), "openai"],
  ["Google", `AIza${body(35)}`, body(35), "google"],
  ["GitHub classic", `ghp_${body(36)}`, body(36), "github"],
  ["GitHub OAuth", `gho_${body(36)}`, body(36), "github"],
  ["GitHub fine-grained", `github_pat_11${body(20)}_${body(59)}`, body(59), "github"],
  ["AWS access key", `AKIA${body(16, "IOSFODNN7EXAMPLE")}`, "IOSFODNN7EXAMPLE", "aws"],
  ["AWS session key", `ASIA${body(16, "Q2WE3RT4YU5IO6PA")}`, "Q2WE3RT4YU5IO6PA", "aws"],
  ["Slack bot", `xoxb-1234567890-1234567890123-${body(24)}`, body(24), "slack"],
  ["Slack user", `xoxp-1234567890-${body(30)}`, body(30), "slack"],
  ["bearer token", `Bearer ${body(40)}.${body(20)}`, body(40), "bearer"],
  ["Authorization header", `Authorization: Bearer ${body(30)}`, body(30), "header"],
  ["Authorization basic", `authorization: Basic ${body(24)}==`, body(24), "header"],
  ["x-api-key header", `x-api-key: ${body(32)}`, body(32), "header"],
  ["x-goog-api-key header", `X-Goog-Api-Key:${body(39)}`, body(39), "header"],
  [
    "key= parameter",
    `https://generativelanguage.googleapis.com/v1/models?key=${body(20)}&alt=sse`,
    body(20),
    "param",
  ],
  ["api_key= parameter", `GET /v1?api_key=${body(24)} HTTP/1.1`, body(24), "param"],
  ["token= parameter", `wss://host/socket?token=${body(30)}`, body(30), "param"],
  ["access_token= parameter", `?access_token=${body(30)}#frag`, body(30), "param"],
];

describe("redact: the secret corpus", () => {
  for (const [what, secret, gone, kind] of CORPUS) {
    test(`${what}: gone in every setting`, () => {
      const settings = [
        secret,
        `error: 401 invalid key ${secret} (check your config)`,
        `{"error":{"message":"Incorrect API key provided: ${secret}"}}`,
        `line one\n${secret}\nline three`,
        `"${secret}"`,
        `'${secret}',`,
      ];
      for (const text of settings) {
        const out = redact(text);
        expect(out).not.toContain(gone);
        expect(out).toContain(`[REDACTED:${kind}]`);
      }
    });
  }

  test("a key cut short at the end of a capped text is gone too", () => {
    const keys = CORPUS.filter(([, , , kind]) =>
      ["anthropic", "openai", "google", "github", "aws", "slack"].includes(kind)
    );
    for (const [, secret] of keys) {
      const prefix = /^(sk-|AIza|gh[pousr]_|github_pat_|xox[abposr]-|AKIA|ASIA)/.exec(secret);
      expect(prefix).not.toBeNull();
      for (let n = prefix![0].length; n < secret.length; n++) {
        for (const tail of ["", "…", "..."]) {
          const out = redact(`error: 401 invalid key ${secret.slice(0, n)}${tail}`);
          expect(out).toBe(
            `error: 401 invalid key ${out.match(/\[REDACTED:[a-z]+\]/)?.[0]}${tail}`,
          );
        }
      }
    }
  });

  test("a redacted JSON value stays valid JSON, keys and structure kept", () => {
    const value = {
      reply: { text: `here: ${CORPUS[0][1]}\n\tand "${CORPUS[5][1]}"` },
      diagnostics: [`Authorization: Bearer ${body(30)}`],
      n: 3,
    };
    const json = redactedJson(value);
    const back = JSON.parse(json);
    expect(back.n).toBe(3);
    expect(back.reply.text).toBe('here: [REDACTED:anthropic]\n\tand "[REDACTED:google]"');
    expect(back.diagnostics[0]).toBe("Authorization: [REDACTED:header]");
  });

  test.each([
    ["Authorization: Bearer abcdefghijklmnop", "Authorization: [REDACTED:header]"],
    ["api_key=sk-abcdefghijklmnopqrstuvwx", "api_key=[REDACTED:openai]"],
    ['{"token": "abcd1234efgh"}', '{"token": "[REDACTED:secret]"}'],
    ['{"client_secret":"abcd1234efgh","n":1}', '{"client_secret":"[REDACTED:secret]","n":1}'],
    ["DB_PASSWORD=hunter22", "DB_PASSWORD=[REDACTED:secret]"],
    ["password: hunter22", "password: [REDACTED:secret]"],
    ["https://bob:hunter22@example.com/x", "https://bob:[REDACTED:url]@example.com/x"],
    ["gh token ghp_abcdefghijklmnopqrstuvwxyz0123", "gh token [REDACTED:github]"],
    ["AWS AKIAABCDEFGHIJKLMNOP here", "AWS [REDACTED:aws] here"],
  ])("%s", (input, expected) => expect(redact(input)).toBe(expected));

  test.each([
    // A header as a JSON member, as agents log their request headers.
    [`{"Authorization": "Basic ${body(24)}=="}`, '{"Authorization": "[REDACTED:header]"}'],
    [`{"x-goog-api-key":"${body(32)}"}`, '{"x-goog-api-key":"[REDACTED:header]"}'],
    // The same inside a JSON string (an error body quoted in a log line): escaped quotes.
    [
      `"body": "{\\"Authorization\\":\\"Basic ${body(24)}\\"}"`,
      `"body": "{\\"Authorization\\":\\"[REDACTED:header]\\"}"`,
    ],
    [
      `{\\"password\\":\\"${body(14)}\\",\\"n\\":1}`,
      `{\\"password\\":\\"[REDACTED:secret]\\",\\"n\\":1}`,
    ],
  ])("JSON-shaped and JSON-escaped: %s", (input, expected) => {
    expect(redact(input)).toBe(expected);
    expect(redact(input)).not.toContain(body(12));
  });

  test("ordinary text is left alone", () => {
    const plain = [
      "the task-manager finished 23 of 24 steps",
      "RESOURCE_EXHAUSTED (code 429): quota exceeded for model gemini-2.5-pro",
      "monkey=banana sort_key=name",
      "disk-usage: 93%",
      "a bearer of bad news",
      "AKIA is a prefix; AKIASHORT is not a key",
      "quota exceeded for gemini-2.5-pro, retry in 30s",
      '{"usage":{"max_tokens": 4096, "output_tokens": 1234}}',
      "tokens: 1234, token_count: 5",
      "see https://example.com:8080/path@v2",
    ];
    for (const text of plain) expect(redact(text)).toBe(text);
  });
});

describe("redact: the quick look before the rules", () => {
  /** The rules applied one by one, as `redact` does after its look for their literals. */
  const everyRule = (text: string) =>
    SECRET_RULES.reduce((out, r) => out.replace(r.pattern, r.replace), text);

  test("redact gives what every rule gives, on every secret shape and its neighbours", () => {
    const texts = [
      ...CORPUS.flatMap(([, secret]) => [secret, secret.toLowerCase(), secret.toUpperCase()]),
      "CREDENTIALS: abcd1234efgh",
      "my_credential=abcd1234efgh",
      "client-SECRET = abcd1234efgh",
      "PASSWD:abcd1234efgh",
      "Proxy-Authorization: token abcd1234efgh",
      "API-KEY=abcd1234efgh",
      "apikey: abcd1234efgh",
      "refresh_token=abcd1234efgh",
      "ID-TOKEN=abcd1234efgh",
      "BEARER abcd1234efgh",
      "HTTPS://bob:hunter22@example.com/x",
      "git+ssh://bob:hunter22@example.com/x",
      "error: invalid key sk-",
      "error: invalid key AIza…",
      "error: invalid key github_pat_...",
      "xoxr-",
      "ASIA",
    ];
    for (const text of texts) {
      expect(redact(text)).toBe(everyRule(text));
      expect(redact(`a ${text} b`)).toBe(everyRule(`a ${text} b`));
    }
  });
});

describe("redact and escapeControls: linear on pathological input", () => {
  const MB = 1024 * 1024;
  const inputs: [string, string][] = [
    ["spaces", " ".repeat(MB)],
    ["key characters", "a".repeat(MB)],
    ["sk- runs", "sk-".repeat(MB / 3)],
    ["short sk- keys", "sk-ab ".repeat(MB / 6)],
    ["bearer and spaces", ("Bearer" + " ".repeat(20)).repeat(MB / 26)],
    ["authorization without value", "Authorization:  ".repeat(MB / 16)],
    ["key= without value", "?key=&".repeat(MB / 6)],
    ["AKIA runs", "AKIA".repeat(MB / 4)],
    ["ghp_ runs", "ghp_".repeat(MB / 4)],
    ["xoxb runs", "xoxb-".repeat(MB / 5)],
    ["dashes", "-".repeat(MB)],
    ["password runs", "password".repeat(MB / 8)],
    ["token assignments without value", "token: ".repeat(MB / 7)],
    ["url schemes", "a://b:".repeat(MB / 6)],
    // Runs of key or scheme characters split by `.`, `-`, `+`: a word boundary at each one.
    ["dotted runs", "a.".repeat(MB / 2)],
    ["hyphenated runs", "a-".repeat(MB / 2)],
    ["scheme character runs", "a+b:/".repeat(MB / 5)],
    ["user without password", "http://u:".repeat(MB / 9)],
    ["escaped-quote headers without value", '\\"authorization\\":\\"'.repeat(MB / 20)],
    ["escaped-quote secrets without value", '\\"secret\\": \\"'.repeat(MB / 14)],
    ["word runs of 40", ("x".repeat(40) + " ").repeat(MB / 41)],
    ["escape bytes", "\x1b[".repeat(MB / 2)],
    ["carriage returns", "\r".repeat(MB)],
  ];
  for (const [what, text] of inputs) {
    test(`1 MB of ${what}`, () => {
      const start = performance.now();
      redact(text);
      escapeControls(text);
      // Generous: a linear pass over 1 MB takes milliseconds; a quadratic one, minutes.
      expect(performance.now() - start).toBeLessThan(5_000);
    });
  }

  test("every rule starts with a literal or a one-character lookbehind", () => {
    for (const r of SECRET_RULES) {
      expect(r.pattern.source).toMatch(/^(\(\?<!\[[^\]]+\]\))?[\w(]/);
      // No quantifier applied to a group that itself holds a quantifier.
      expect(r.pattern.source).not.toMatch(/\([^)]*[+*}][^)]*\)[+*{]/);
    }
  });
});

describe("escapeControls", () => {
  test("control characters become visible; tab, newline and CRLF stay", () => {
    expect(escapeControls("a\x1b[2Jb\x07c\x9bd\x00e\x7f")).toBe(
      "a\\x1b[2Jb\\x07c\\x9bd\\x00e\\x7f",
    );
    expect(escapeControls("one\r\ntwo\tthree\n")).toBe("one\r\ntwo\tthree\n");
    expect(escapeControls("over\rwrite")).toBe("over\\x0dwrite");
  });

  test("bidirectional overrides and isolates cannot reorder what is shown", () => {
    expect(escapeControls("ok \u202eevil\u202c \u2066x\u2069 \u202a")).toBe(
      "ok \\u202eevil\\u202c \\u2066x\\u2069 \\u202a",
    );
    // Ordinary right-to-left text and other Unicode stay as they are.
    expect(escapeControls("שלום مرحبا – …")).toBe("שלום مرحبا – …");
  });
});
