/**
 * Fixtures the unit tests of lib/acp/, lib/cause/ and lib/proxy/ share: byte helpers, a
 * fresh turn, and a classifier of anchors made here with generic categories.
 */
import * as v from "valibot";
import { compileAnchor, DeclarativeAnchorSchema } from "../../lib/cause/anchors.ts";
import { buildClassifier, type Classifier } from "../../lib/cause/classifier.ts";
import { AnchorSchema, defineAnchor } from "../../lib/plugin/api.ts";
import type { TextKeeping } from "../../lib/proxy/reply_text.ts";
import { type Turn, Turns } from "../../lib/proxy/turns.ts";

/** UTF-8 bytes of a string. */
export const enc = (s: string) => new TextEncoder().encode(s);
/** The string UTF-8 bytes decode to. */
export const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** An empty log snapshot. */
export const snapshot = { patterns: [], files: new Map(), takenAt: 0, diagnostics: [] };

/** A fresh turn of session s1 (request 7), started at 1000 ms. */
export function testTurn(keepText: TextKeeping = "reply"): Turn {
  return new Turns().start({
    sessionId: "s1",
    requestId: 7,
    promptLine: enc("{}\n"),
    promptMeta: { trace: "t" },
    startedAt: 1000,
    snapshot,
    trackToolCalls: true,
    keepText,
  });
}

/** A classifier of anchors made here, with generic categories, so the tests own them. */
export function testClassifier(): Classifier {
  const decl = (o: Record<string, unknown>) =>
    v.parse(AnchorSchema(), compileAnchor(v.parse(DeclarativeAnchorSchema(), o)));
  return buildClassifier([
    decl({
      id: "t.quota",
      regex: "quota (reached|exceeded)|usage limit",
      ignore_case: true,
      category: "quota",
      priority: 90,
      on: ["text", "error"],
    }),
    decl({
      id: "t.rate",
      regex: "\\b429\\b|too many requests|rate limit",
      ignore_case: true,
      category: "rate_limit",
      priority: 80,
      on: ["text", "error"],
    }),
    decl({ id: "t.log", literal: "agent executor error:", priority: 300 }),
    v.parse(
      AnchorSchema(),
      defineAnchor({
        id: "t.pack",
        priority: 200,
        on: ["error"],
        match: (input) =>
          input.kind === "error" &&
            (input.error.data as { kind?: string } | undefined)?.kind === "auth"
            ? { cause: "Please log in again", category: "auth", code: 401 }
            : null,
      }),
    ),
  ]);
}
