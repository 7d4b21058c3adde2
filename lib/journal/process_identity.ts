/**
 * Process identity: a pid alone does not name a process for long — once it exits, the
 * kernel hands the number to another one — nor anywhere but on its host and in its pid
 * namespace. The journal records the owner's start time and its pid space besides its pid,
 * so that `turnguard wait` never waits on, and `turnguard retry` never signals, a stranger
 * that has the same number. The probe of the real system is a small interface; the
 * decision is pure.
 */
import { readFileSync, readlinkSync } from "node:fs";
import type { Owner } from "./records.ts";
import { errCode } from "../io/logfs.ts";

/** What the system says of a pid, and where this process's pids are valid. */
export interface ProcessProbe {
  /** `process.kill(pid, 0)`: whether a process has the pid (EPERM: it has, not ours). */
  exists(pid: number): boolean;
  /** The text of `/proc/PID/stat`, or null where it cannot be read (no /proc, gone). */
  stat(pid: number): string | null;
  /** This process's pid space (see `pidSpace`), or null where it cannot be read. */
  space(): string | null;
}

/**
 * Where this process's pids are valid: the host's boot id and the pid namespace, as
 * `BOOT_ID/pid:[INODE]`. A pid read from the journal by a process with another space (another
 * host, another container) names some other process, or none. Undefined without /proc.
 */
export function pidSpace(): string | undefined {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    return `${boot}/${readlinkSync("/proc/self/ns/pid")}`;
  } catch {
    return undefined;
  }
}

/** This process as a journal record names its owner. */
export function thisProcess(): Owner {
  return { pid: process.pid, pidStart: processStart(process.pid), pidSpace: pidSpace() };
}

/** The real system. */
export const SYSTEM_PROBE: ProcessProbe = {
  exists(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return errCode(err) === "EPERM";
    }
  },
  stat(pid) {
    try {
      return readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return null;
    }
  },
  space: () => pidSpace() ?? null,
};

/**
 * Reads `/proc/PID/stat`: the state (field 3) and the start time in clock ticks since boot
 * (field 22). The command name (field 2) is in parentheses and may hold spaces and `)`, so
 * fields are counted after its last `)`. Null when the text is not such a line.
 */
export function parseProcStat(text: string): { state: string; start: string } | null {
  const close = text.lastIndexOf(")");
  if (close === -1) return null;
  const fields = text.slice(close + 1).trim().split(/\s+/);
  // fields[0] is field 3; field 22 is fields[19].
  const state = fields[0];
  const start = fields[19];
  if (state === undefined || start === undefined || !/^\d+$/.test(start)) return null;
  return { state, start };
}

/**
 * The identity token of a running process (Linux: its start time, field 22 of
 * /proc/PID/stat), or undefined where it cannot be read. Compared for equality only.
 */
export function processStart(pid: number, probe: ProcessProbe = SYSTEM_PROBE): string | undefined {
  const text = probe.stat(pid);
  return text === null ? undefined : parseProcStat(text)?.start;
}

/**
 * Where the process that owns a journal record stands: `alive` (it runs, and its start time
 * matches), `gone` (no such pid, a zombie, or another process that reuses the pid),
 * `unverified` (a process has the pid, but its start time is unknown here or was not
 * recorded), or `elsewhere` (it runs on another host or in another pid namespace: its pid
 * means nothing here).
 */
export type OwnerState = "alive" | "gone" | "unverified" | "elsewhere";

/** Checks the recorded owner against the process that has its pid here. */
export function ownerState(owner: Owner, probe: ProcessProbe = SYSTEM_PROBE): OwnerState {
  if (owner.pidSpace !== undefined && owner.pidSpace !== probe.space()) return "elsewhere";
  if (!probe.exists(owner.pid)) return "gone";
  const text = probe.stat(owner.pid);
  const stat = text === null ? null : parseProcStat(text);
  if (stat === null) return "unverified";
  if (stat.state === "Z" || stat.state === "X") return "gone";
  if (owner.pidStart === undefined) return "unverified";
  return stat.start === owner.pidStart ? "alive" : "gone";
}
