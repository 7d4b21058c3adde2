import { describe, expect, test } from "bun:test";
import { type Cause, decide, exitCause, type TurnFacts } from "../lib/decide.ts";

const cause = (message: string, category: Cause["error"]["category"] = "quota"): Cause => ({
  error: { code: 429, message, category, anchor: "a", source: null },
  retry: { retryable: true, reason: "r", afterMs: 1000, at: null },
});
const LOG = cause("from the log");
const STDERR = cause("from stderr", "auth");
const GENERIC = cause("Internal error", "unknown");

const base: TurnFacts = {
  cancelled: false,
  exit: null,
  stopReason: null,
  agentError: null,
  output: 0,
  logCause: null,
  timeout: null,
};

describe("decide — run mode truth table", () => {
  // [exit code, signal, cancelled, output, stderr cause, log cause] -> [status, message, swallowed]
  const rows: Array<
    [
      number | null,
      string | null,
      boolean,
      number,
      Cause | null,
      Cause | null,
      string,
      string | null,
      boolean,
    ]
  > = [
    [0, null, false, 5, null, null, "ok", null, false],
    [0, null, false, 5, null, LOG, "ok", null, false],
    [0, null, false, 0, null, null, "empty", null, false],
    [0, null, false, 0, null, LOG, "failed", "from the log", true],
    [2, null, false, 0, STDERR, null, "failed", "from stderr", false],
    [2, null, false, 0, STDERR, LOG, "failed", "from stderr", false],
    [2, null, false, 7, STDERR, LOG, "failed", "from stderr", false],
    [2, null, false, 0, null, LOG, "failed", "from the log", false],
    [2, null, false, 0, null, null, "failed", "exited with status 2", false],
    [2, null, false, 0, GENERIC, LOG, "failed", "from the log", false],
    [null, "SIGKILL", false, 0, null, null, "failed", "killed by signal SIGKILL", false],
    [null, "SIGKILL", false, 3, null, LOG, "failed", "from the log", false],
    [null, "SIGINT", true, 0, null, null, "cancelled", null, false],
    [130, null, true, 0, null, LOG, "cancelled", null, false],
    [0, null, true, 4, null, null, "cancelled", null, false],
  ];
  for (
    const [code, signal, cancelled, output, agentError, logCause, status, message, swallowed]
      of rows
  ) {
    test(`exit=${code} signal=${signal} cancelled=${cancelled} out=${output} stderr=${!!agentError} log=${!!logCause}`, () => {
      const d = decide({
        ...base,
        exit: { code, signal },
        cancelled,
        output,
        agentError,
        logCause,
      });
      expect(d.status).toBe(status as never);
      expect(d.error?.message ?? null).toBe(message);
      expect(d.swallowed).toBe(swallowed);
      if (status === "failed") expect(d.retry).not.toBeNull();
      else expect(d.retry).toBeNull();
    });
  }

  test("a generic agent error keeps its own code when sharpened by the log cause", () => {
    const d = decide({
      ...base,
      exit: { code: 1, signal: null },
      agentError: { ...GENERIC, error: { ...GENERIC.error, code: -32603 } },
      logCause: LOG,
    });
    expect(d.error).toEqual({ ...LOG.error, code: -32603 });
  });

  test("exitCause names the signal or the status", () => {
    expect(exitCause({ code: 3, signal: null }).error.message).toBe("exited with status 3");
    expect(exitCause({ code: null, signal: "SIGSEGV" }).error.category).toBe("crash");
  });
});

describe("decide — proxy mode (stop reasons)", () => {
  const rows: Array<[string | null, number, Cause | null, Cause | null, boolean, string]> = [
    ["end_turn", 10, null, null, false, "ok"],
    ["end_turn", 0, null, null, false, "empty"],
    ["end_turn", 0, null, LOG, false, "failed"],
    ["end_turn", 10, null, LOG, false, "ok"],
    ["max_tokens", 10, null, null, false, "truncated"],
    ["max_tokens", 0, null, LOG, false, "truncated"],
    ["max_turn_requests", 0, null, null, false, "truncated"],
    ["refusal", 0, null, LOG, false, "refused"],
    ["cancelled", 0, null, LOG, false, "cancelled"],
    ["end_turn", 0, null, null, true, "cancelled"],
    [null, 0, STDERR, null, false, "failed"],
    [null, 5, STDERR, LOG, false, "failed"],
  ];
  for (const [stopReason, output, agentError, logCause, cancelled, status] of rows) {
    test(`${stopReason} out=${output} err=${!!agentError} log=${!!logCause} cancelled=${cancelled}`, () => {
      expect(decide({ ...base, stopReason, output, agentError, logCause, cancelled }).status).toBe(
        status as never,
      );
    });
  }

  test("a timeout wins over everything and is the timeout cause", () => {
    const t = cause("silent for 30s", "timeout");
    const d = decide({ ...base, stopReason: "cancelled", cancelled: true, timeout: t, output: 9 });
    expect(d.status).toBe("failed");
    expect(d.error?.category).toBe("timeout");
  });
});
