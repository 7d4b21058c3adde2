/**
 * A local mock of three model APIs on 127.0.0.1, driven by one corpus scenario: Anthropic
 * Messages (`/v1/messages`, JSON or SSE), Gemini (`:generateContent`, `:streamGenerateContent`
 * with `alt=sse`, `:countTokens`) and OpenAI (`/v1/responses` and `/v1/chat/completions`, JSON
 * or SSE; `/v1/models`). It answers fast (agents retry errors) and logs every request it saw.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  ANSWER,
  type Behavior,
  MIDSTREAM,
  PARTIAL,
  type Provider,
  type Scenario,
} from "./scenarios.ts";

/** One request the mock received (bodies cut to keep transcripts small). */
export interface SeenRequest {
  t: number;
  method: string;
  path: string;
  provider: Provider | "other";
  stream: boolean;
  status: number;
  body: string;
}

/** A running mock: its port, the requests it answered, and how to stop it. */
export interface MockApi {
  port: number;
  seen: SeenRequest[];
  /** From now on, answers model requests as the scenario's second turn (`then`). */
  nextTurn(): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

function providerOf(path: string): Provider | "other" {
  if (path.includes("/messages")) return "anthropic";
  if (path.includes(":generateContent") || path.includes(":streamGenerateContent")) return "gemini";
  if (path.includes(":countTokens")) return "gemini";
  if (path.includes("/responses") || path.includes("/chat/completions")) return "openai";
  return "other";
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Cuts a request body for the record: long strings (system prompts, tool schemas) shortened. */
export function trimBody(text: string, max = 4000): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text.length > max ? `${text.slice(0, max)}…[${text.length} chars]` : text;
  }
  const cut = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return v.length > 200 ? `${v.slice(0, 200)}…[${v.length} chars]` : v;
    if (Array.isArray(v)) {
      const head = v.slice(0, 8).map((x) => cut(x, depth + 1));
      return v.length > 8 ? [...head, `…[${v.length} items]`] : head;
    }
    if (v && typeof v === "object") {
      if (depth > 6) return "…";
      const out: Json = {};
      for (const [k, x] of Object.entries(v)) {
        out[k] = k === "tools" && Array.isArray(x) ? `[${x.length} tools]` : cut(x, depth + 1);
      }
      return out;
    }
    return v;
  };
  const s = JSON.stringify(cut(parsed, 0));
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** Starts the mock for `scenario` on an ephemeral loopback port. */
export async function startMock(scenario: Scenario): Promise<MockApi> {
  const seen: SeenRequest[] = [];
  const hanging = new Set<ServerResponse>();
  let behaviors = scenario.behavior;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = req.url ?? "/";
      const provider = providerOf(path);
      let json: Json = {};
      try {
        json = JSON.parse(body || "{}");
      } catch { /* not JSON */ }
      const stream = json.stream === true || path.includes("streamGenerateContent");
      const rec: SeenRequest = {
        t: Date.now(),
        method: req.method ?? "",
        path,
        provider,
        stream,
        status: 0,
        body: trimBody(body),
      };
      seen.push(rec);
      const behavior: Behavior = provider === "other"
        ? { kind: "ok" }
        : behaviors[provider] ?? { kind: "ok" };
      void answer(req, res, provider, path, json, stream, behavior, rec, hanging);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    seen,
    nextTurn: () => {
      behaviors = scenario.then ?? behaviors;
    },
    close: () => {
      // Not awaited: keep-alive sockets of the agent would hold `close` open.
      for (const res of hanging) res.socket?.destroy();
      server.closeAllConnections?.();
      server.close();
      return Promise.resolve();
    },
  };
}

async function answer(
  _req: IncomingMessage,
  res: ServerResponse,
  provider: Provider | "other",
  path: string,
  json: Json,
  stream: boolean,
  behavior: Behavior,
  rec: SeenRequest,
  hanging: Set<ServerResponse>,
): Promise<void> {
  if (provider === "other") {
    rec.status = path.includes("/models") ? 200 : 404;
    if (path.includes("/models")) {
      return sendJson(res, 200, { object: "list", data: [{ id: "gpt-5", object: "model" }] });
    }
    return sendJson(res, 404, { error: { message: `no route ${path}` } });
  }
  if (path.includes(":countTokens")) {
    rec.status = 200;
    return sendJson(res, 200, { totalTokens: 12 });
  }
  if (behavior.kind === "hang") {
    rec.status = -1;
    hanging.add(res);
    return;
  }
  if (behavior.kind === "error") {
    rec.status = behavior.status;
    return sendJson(res, behavior.status, behavior.body, behavior.headers);
  }
  rec.status = 200;
  const wire = provider === "anthropic"
    ? anthropicWire
    : provider === "gemini"
    ? geminiWire
    : path.includes("/chat/completions")
    ? chatWire
    : responsesWire;
  if (!stream) {
    // A whole-body answer fails the way the stream would: cut mid-body (socket closed, or the
    // response ended early), or the mid-stream error as the HTTP error it would have been.
    // stream_cut_fallback: the agent's non-streaming retry after a cut stream is answered.
    if (behavior.kind === "cut" && behavior.whole === "answered") {
      return sendJson(res, 200, wire.whole({ kind: "ok" }, json));
    }
    if (behavior.kind === "cut" || behavior.kind === "noend") {
      const text = JSON.stringify(wire.whole({ kind: "ok" }, json));
      res.writeHead(200, { "content-type": "application/json" });
      res.write(text.slice(0, Math.floor(text.length / 2)));
      if (behavior.kind === "cut") res.socket?.destroy();
      else res.end();
      return;
    }
    if (behavior.kind === "midstream") {
      const status = behavior.error === "rate_limit" ? 429 : provider === "anthropic" ? 529 : 503;
      rec.status = status;
      const body = provider === "openai"
        ? {
          error: {
            ...MIDSTREAM.openai[behavior.error],
            type: behavior.error === "rate_limit" ? "requests" : "server_error",
            param: null,
          },
        }
        : MIDSTREAM[provider][behavior.error];
      return sendJson(res, status, body);
    }
    return sendJson(res, 200, wire.whole(behavior, json));
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const events = wire.events(behavior, json);
  for (const e of events) {
    res.write(e);
    await sleep(5);
  }
  if (behavior.kind === "cut") {
    res.socket?.destroy();
    return;
  }
  res.end();
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

/** How one provider renders a behavior: as one JSON body, or as SSE event strings. */
interface Wire {
  whole(b: Behavior, req: Json): unknown;
  events(b: Behavior, req: Json): string[];
}

const sse = (event: string | null, data: unknown) =>
  `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

/** The text a behavior streams before it ends (whole answer, or the fragment). */
function textOf(b: Behavior): string {
  return b.kind === "ok" ? ANSWER : b.kind === "refusal" ? "" : PARTIAL;
}

/** JSON mode request (gemini-cli's side checks ask for JSON): an answer that parses. */
function wantsJson(req: Json): boolean {
  const cfg = req.generationConfig as Json | undefined;
  return cfg?.responseMimeType === "application/json";
}

/** A provider's word for how a behavior stops: [at the token limit, refused, done]. */
function stopWord(b: Behavior, words: [string, string, string]): string {
  return b.kind === "max_tokens" ? words[0] : b.kind === "refusal" ? words[1] : words[2];
}

const anthropicWire: Wire = {
  whole(b, req) {
    const stop = stopWord(b, ["max_tokens", "refusal", "end_turn"]);
    return {
      id: "msg_corpus_whole",
      type: "message",
      role: "assistant",
      model: req.model ?? "claude-sonnet-4-5",
      content: b.kind === "refusal" ? [] : [{ type: "text", text: textOf(b) }],
      stop_reason: stop,
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 9 },
    };
  },
  events(b, req) {
    const out = [
      sse("message_start", {
        type: "message_start",
        message: {
          id: "msg_corpus_stream",
          type: "message",
          role: "assistant",
          model: req.model ?? "claude-sonnet-4-5",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 12, output_tokens: 1 },
        },
      }),
    ];
    const text = textOf(b);
    if (text) {
      out.push(
        sse("content_block_start", {
          type: "content_block_start",
          index: 0,
          content_block: { type: "text", text: "" },
        }),
      );
      out.push(sse("ping", { type: "ping" }));
      for (const piece of text.match(/.{1,12}/g) ?? []) {
        out.push(
          sse("content_block_delta", {
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: piece },
          }),
        );
      }
    }
    if (b.kind === "cut" || b.kind === "noend") return out;
    if (b.kind === "midstream") {
      out.push(sse("error", MIDSTREAM.anthropic[b.error]));
      return out;
    }
    if (text) out.push(sse("content_block_stop", { type: "content_block_stop", index: 0 }));
    const stop = stopWord(b, ["max_tokens", "refusal", "end_turn"]);
    out.push(
      sse("message_delta", {
        type: "message_delta",
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: 9 },
      }),
    );
    out.push(sse("message_stop", { type: "message_stop" }));
    return out;
  },
};

function geminiChunk(text: string | null, finishReason?: string, extra: Json = {}): Json {
  const candidate: Json = { index: 0, ...extra };
  if (text !== null) candidate.content = { role: "model", parts: [{ text }] };
  if (finishReason) candidate.finishReason = finishReason;
  return {
    candidates: [candidate],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 9, totalTokenCount: 21 },
    modelVersion: "gemini-2.5-pro",
    responseId: "corpus-gemini",
  };
}

const SAFETY = {
  safetyRatings: [{
    category: "HARM_CATEGORY_DANGEROUS_CONTENT",
    probability: "HIGH",
    blocked: true,
  }],
};

const geminiWire: Wire = {
  whole(b, req) {
    if (wantsJson(req)) {
      return geminiChunk(
        JSON.stringify({
          reasoning: "The user asked a simple question; the model answered.",
          next_speaker: "user",
          model_choice: "flash",
        }),
        "STOP",
      );
    }
    if (b.kind === "refusal") return geminiChunk(null, "SAFETY", SAFETY);
    return geminiChunk(textOf(b), b.kind === "max_tokens" ? "MAX_TOKENS" : "STOP");
  },
  events(b, req) {
    if (wantsJson(req)) return [sse(null, this.whole(b, req))];
    if (b.kind === "refusal") return [sse(null, geminiChunk(null, "SAFETY", SAFETY))];
    const pieces = textOf(b).match(/.{1,12}/g) ?? [];
    const out = pieces.map((p, i) =>
      sse(
        null,
        geminiChunk(
          p,
          i === pieces.length - 1 && (b.kind === "ok" || b.kind === "max_tokens")
            ? (b.kind === "ok" ? "STOP" : "MAX_TOKENS")
            : undefined,
        ),
      )
    );
    if (b.kind === "midstream") out.push(sse(null, MIDSTREAM.gemini[b.error]));
    return out;
  },
};

function responseObject(status: string, text: string | null, extra: Json = {}): Json {
  const output = text === null ? [] : [{
    id: "msg_corpus",
    type: "message",
    status: status === "completed" ? "completed" : "incomplete",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [] }],
  }];
  return {
    id: "resp_corpus",
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: "gpt-5",
    output,
    usage: {
      input_tokens: 12,
      output_tokens: 9,
      total_tokens: 21,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    },
    ...extra,
  };
}

const responsesWire: Wire = {
  whole(b) {
    if (b.kind === "refusal") {
      return {
        ...responseObject("completed", null),
        output: [{
          id: "msg_corpus",
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "refusal", refusal: "I'm sorry, but I can't help with that." }],
        }],
      };
    }
    if (b.kind === "max_tokens") {
      return responseObject("incomplete", PARTIAL, {
        incomplete_details: { reason: "max_output_tokens" },
      });
    }
    return responseObject("completed", textOf(b));
  },
  events(b) {
    let seq = 0;
    const ev = (type: string, data: Json) => sse(type, { type, sequence_number: seq++, ...data });
    const out = [
      ev("response.created", { response: responseObject("in_progress", null) }),
      ev("response.in_progress", { response: responseObject("in_progress", null) }),
    ];
    const itemAdded = ev("response.output_item.added", {
      output_index: 0,
      item: {
        id: "msg_corpus",
        type: "message",
        status: "in_progress",
        role: "assistant",
        content: [],
      },
    });
    const partAdded = (part: Json) =>
      ev("response.content_part.added", {
        item_id: "msg_corpus",
        output_index: 0,
        content_index: 0,
        part,
      });
    if (b.kind === "refusal") {
      const refusal = "I'm sorry, but I can't help with that.";
      out.push(itemAdded);
      out.push(partAdded({ type: "refusal", refusal: "" }));
      out.push(
        ev("response.refusal.delta", {
          item_id: "msg_corpus",
          output_index: 0,
          content_index: 0,
          delta: refusal,
        }),
      );
      out.push(
        ev("response.refusal.done", {
          item_id: "msg_corpus",
          output_index: 0,
          content_index: 0,
          refusal,
        }),
      );
      const item = {
        id: "msg_corpus",
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "refusal", refusal }],
      };
      out.push(ev("response.output_item.done", { output_index: 0, item }));
      out.push(
        ev("response.completed", {
          response: { ...responseObject("completed", null), output: [item] },
        }),
      );
      return out;
    }
    const text = textOf(b);
    out.push(itemAdded);
    out.push(partAdded({ type: "output_text", text: "", annotations: [] }));
    for (const piece of text.match(/.{1,12}/g) ?? []) {
      out.push(
        ev("response.output_text.delta", {
          item_id: "msg_corpus",
          output_index: 0,
          content_index: 0,
          delta: piece,
        }),
      );
    }
    if (b.kind === "cut" || b.kind === "noend") return out;
    if (b.kind === "midstream") {
      const error = MIDSTREAM.openai[b.error];
      out.push(ev("response.failed", { response: { ...responseObject("failed", null), error } }));
      return out;
    }
    out.push(
      ev("response.output_text.done", {
        item_id: "msg_corpus",
        output_index: 0,
        content_index: 0,
        text,
      }),
    );
    const item = {
      id: "msg_corpus",
      type: "message",
      status: b.kind === "ok" ? "completed" : "incomplete",
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [] }],
    };
    out.push(ev("response.output_item.done", { output_index: 0, item }));
    if (b.kind === "max_tokens") {
      out.push(
        ev("response.incomplete", {
          response: responseObject("incomplete", text, {
            incomplete_details: { reason: "max_output_tokens" },
          }),
        }),
      );
    } else {
      out.push(ev("response.completed", { response: responseObject("completed", text) }));
    }
    return out;
  },
};

const chatWire: Wire = {
  whole(b) {
    const finish = stopWord(b, ["length", "content_filter", "stop"]);
    return {
      id: "chatcmpl-corpus",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "gpt-5",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: textOf(b),
          refusal: b.kind === "refusal" ? "I'm sorry, but I can't help with that." : null,
        },
        finish_reason: finish,
      }],
      usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
    };
  },
  events(b) {
    const chunk = (delta: Json, finish: string | null) =>
      sse(null, {
        id: "chatcmpl-corpus",
        object: "chat.completion.chunk",
        created: 0,
        model: "gpt-5",
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
    const out = [chunk({ role: "assistant", content: "" }, null)];
    for (const piece of textOf(b).match(/.{1,12}/g) ?? []) {
      out.push(chunk({ content: piece }, null));
    }
    if (b.kind === "cut" || b.kind === "noend") return out;
    if (b.kind === "midstream") {
      out.push(sse(null, { error: MIDSTREAM.openai[b.error] }));
      return out;
    }
    out.push(
      chunk(
        {},
        stopWord(b, ["length", "content_filter", "stop"]),
      ),
    );
    out.push("data: [DONE]\n\n");
    return out;
  },
};
