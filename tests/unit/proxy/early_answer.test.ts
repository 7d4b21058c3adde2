import { describe, expect, test } from "bun:test";
import { fallbackResponse } from "../../../lib/proxy/answer_rules.ts";
import { endEarly } from "../../../lib/core/end_early.ts";

describe("a prompt answered early (--fail-fast)", () => {
  test("should its turn's end fail, the client still gets the attempt's cause", () => {
    const early = endEarly([{
      n: 2,
      at: "2026-12-01T00:00:00.000Z",
      cause: "You exceeded your current quota",
      category: "quota",
      code: 429,
      retryable: false,
      source: { kind: "records", path: "/chats/s.jsonl" },
    }], true)!;
    const r = fallbackResponse(7, { kind: "early", early }) as {
      id: number;
      error: { code: number; message: string; data: { turnguard: Record<string, unknown> } };
    };
    expect(r.id).toBe(7);
    expect(r.error.code).toBe(-32603);
    expect(r.error.message).toBe("You exceeded your current quota");
    expect(r.error.data.turnguard).toMatchObject({
      status: "failed",
      category: "quota",
      code: 429,
      endedEarly: early.reason,
    });
  });
});
