/**
 * The generic HTTP/gRPC rules read the log lines of any profile that has logs, but only
 * lines logged at error level: a custom profile's plain `ERROR ... 429 Too Many Requests`
 * is a failed turn, not an empty one; the same words at WARN (a retry) are no cause.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isErrorLine, logMessage } from "../../../plugins/generic.ts";
import { homeEnv, turnguard } from "../../helpers/cli.ts";

let home: string;
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "tg-genlog-"));
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("generic rules on log lines", () => {
  test("logMessage: the message after the glog prefix or the level word", () => {
    expect(logMessage("2026-03-02T10:15:04Z ERROR backend: 429")).toBe("backend: 429");
    expect(logMessage("[ERROR] x")).toBe("x");
    expect(logMessage("E0302 10:15:04.123456 1 x.go:1] UNAVAILABLE")).toBe("UNAVAILABLE");
    expect(logMessage('{"level":"error","msg":"ERROR x"}')).toBe(
      '{"level":"error","msg":"ERROR x"}',
    );
  });

  test("isErrorLine: level words, glog E/F, JSON and logfmt levels", () => {
    for (
      const line of [
        "2026-03-02T10:15:04Z ERROR backend: 429 Too Many Requests",
        "[FATAL] model unreachable",
        "E0302 10:15:04.123456 1 x.go:1] UNAVAILABLE",
        '{"level":"error","msg":"429 Too Many Requests"}',
        "ts=1 level=error msg=overloaded",
        // pino / bunyan numeric levels: error 50, fatal 60
        '{"level":50,"time":1,"pid":7,"msg":"429 Too Many Requests"}',
        '{"name":"agent","level": 60,"msg":"crash"}',
        // winston: json, simple, simple with a timestamp, colorized cli
        '{"level":"error","message":"Request failed with status code 503"}',
        "error: Request failed with status code 503",
        "2026-03-02T10:15:04.000Z error: upstream connect error",
        "\x1b[31merror\x1b[39m: upstream connect error",
        // bracketed levels (nginx, Apache), Google Cloud severity, ECS, log15, slog text
        "2026/03/02 10:15:04 [error] 12#0: *1 upstream timed out",
        "[Mon Mar 02 10:15:04 2026] [core:error] [pid 7] AH00124: Request exceeded the limit",
        '{"severity":"ERROR","message":"quota exceeded"}',
        '{"@timestamp":"2026-03-02","log.level":"error","message":"401"}',
        't=2026-03-02T10:15:04 lvl=eror msg="request failed"',
        'time=2026-03-02T10:15:04Z level=ERROR msg="503 Service Unavailable"',
      ]
    ) expect({ line, error: isErrorLine(line) }).toEqual({ line, error: true });
    for (
      const line of [
        "2026-03-02T10:15:04Z WARN retrying after 429 Too Many Requests (error 1 of 5)",
        "W0302 10:15:04.123456 1 x.go:1] Error: RESOURCE_EXHAUSTED",
        '{"level":"info","msg":"error budget ok"}',
        '{"level":30,"msg":"error: none"}',
        '{"level":40,"msg":"retrying after 429"}',
        "info: retried the error: 429 once",
        "warn: error: will retry",
        "2026/03/02 10:15:04 [warn] 12#0: an [error] page was served",
        "ts=1 level=warn msg=error_rate",
      ]
    ) expect({ line, error: isErrorLine(line) }).toEqual({ line, error: false });
  });

  const turn = async (logLine: string) => {
    const log = join(home, "gateway.log");
    writeFileSync(log, "");
    const config = join(home, "turnguard.toml");
    writeFileSync(config, `[agent.custom]\nlogs = [${JSON.stringify(log)}]\n`);
    const agent = join(home, "agent.sh");
    writeFileSync(agent, `#!/bin/sh\necho '${logLine}' >> ${JSON.stringify(log)}\n`, {
      mode: 0o755,
    });
    return await turnguard(
      ["run", "--config", config, "--agent", "custom", "--outcome-json", "--", agent],
      { env: homeEnv(home) },
    );
  };

  test("a custom profile's ERROR 429 log line fails the turn (rate_limit), exit 1", async () => {
    const r = await turn("2026-03-02T10:15:04Z ERROR backend: 429 Too Many Requests");
    const o = JSON.parse(r.stdout);
    expect([r.code, o.status, o.error.category, o.error.anchor, o.error.message]).toEqual([
      1,
      "failed",
      "rate_limit",
      "generic.rate-limit",
      "backend: 429 Too Many Requests",
    ]);
  });

  test("a pino error line (level 50) of a custom agent fails the turn", async () => {
    const r = await turn('{"level":50,"time":1,"msg":"Request failed: 503 Service Unavailable"}');
    const o = JSON.parse(r.stdout);
    expect([r.code, o.status, o.error.category]).toEqual([1, "failed", "capacity"]);
  });

  test("the same words at WARN are no cause: the turn is empty, and it says where it looked", async () => {
    const r = await turn("2026-03-02T10:15:04Z WARN backend: 429 Too Many Requests, retrying");
    const o = JSON.parse(r.stdout);
    expect(o.status).toBe("empty");
    expect(o.diagnostics).toContain(
      "empty: the agent exited 0 with no output; stderr was empty; 1 log file(s) grew but no " +
        `line logged at error level named a cause (${join(home, "gateway.log")})`,
    );
  });

  test("an empty turn of an agent with no profile says that no log was read", async () => {
    const r = await turnguard(["run", "-v", "--", "true"], { env: homeEnv(home) });
    expect([r.code, r.stderr.trim()]).toEqual([
      0,
      "turnguard: empty: the agent exited 0 with no output; stderr was empty; profile true " +
      "names no log files (a profile's `logs` lets turnguard read them)",
    ]);
  });
});
