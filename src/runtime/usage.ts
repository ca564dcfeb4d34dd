// CPU and memory of editor processes: every process of every editor's group (code-server runs its
// server in a child), summed per group leader.
//
// On Linux each process's /proc/<pid>/stat is read once per sample: the read that tells which
// group a process is in also gives its CPU time, start time and resident pages, so a member is not
// read a second time. Every process on the machine is read only every FULL_SCAN_EVERY samples (or
// when the editors change); the samples between read the members found then. The reads are done a slice at a time with the event loop let go between
// slices, so a sample never holds up requests for the whole scan (at 30 editors it read every
// process on the machine in one go: 4–60 ms of a blocked event loop every 2 s). CPU percent is
// the CPU time used since the previous sample over the time between them, as pidusage measured
// it; elsewhere pidusage does the sampling, as before.
import { execFile } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import pidusage from 'pidusage';
import { listPids, readStat, type ProcessIdentity } from '../core/procfs.ts';

export interface EditorUsage {
  cpuPercent: number;
  memoryMb: number;
  /** Seconds the editor has been running. */
  uptime: number;
  /** CPU time (user and system) of the group's live processes, in seconds; what exited children used is not in it. */
  cpuSeconds?: number;
  /** Resident memory of the group, in bytes (memoryMb unrounded). */
  memoryBytes?: number;
}

/** One process's figures, as pidusage gives them: CPU percent since the last sample, bytes, ms. */
interface ProcessSample {
  cpu: number;
  memory: number;
  ctime: number;
  elapsed: number;
}

/** Usage per editor (group leader); one that vanished meanwhile is left out. */
export async function processGroupUsage(leaders: ProcessIdentity[]): Promise<Map<ProcessIdentity, EditorUsage>> {
  const byPid = new Map(leaders.map((l) => [l.pid, l]));
  const next = new Map<ProcessIdentity, Required<EditorUsage>>();
  if (byPid.size === 0) return next;
  const samples = process.platform === 'linux' ? await sampleGroups(new Set(byPid.keys())) : await sampleWithPidusage(new Set(byPid.keys()));
  for (const [pid, [leader, stat]] of samples) {
    const handle = byPid.get(leader)!;
    const total = next.get(handle) ?? { cpuPercent: 0, memoryMb: 0, uptime: 0, cpuSeconds: 0, memoryBytes: 0 };
    total.cpuPercent = round(total.cpuPercent + stat.cpu);
    total.memoryMb = round(total.memoryMb + stat.memory / (1024 * 1024));
    total.cpuSeconds += stat.ctime / 1000;
    total.memoryBytes += stat.memory;
    if (pid === leader) total.uptime = stat.elapsed / 1000;
    next.set(handle, total);
  }
  return next;
}

/** Forgets each process's last sample (the service stops). */
export function clearUsageHistory(): void {
  history.clear();
  lastScan = undefined;
  pidusage.clear();
}

// --- Linux: /proc read once per process ---

/** Processes read between two turns of the event loop (about 20–40 µs each). */
const SLICE = 16;

/** Each process's CPU ticks at the last sample, by pid, with its start time (a reused pid starts anew). */
const history = new Map<number, { startTicks: number; ticks: number; uptimeMs: number }>();

/**
 * Every process on the machine is read (to find the groups' members) once every this many
 * samples, and whenever the groups sampled change; the samples between read only the members
 * found last time (and the leaders), so a sample costs what the editors run, not what the
 * machine runs. A process an editor starts later is counted from the next full look.
 */
export const FULL_SCAN_EVERY = 5;
let lastScan: { leaders: string; members: number[]; samplesSince: number } | undefined;

let constants: Promise<{ clockTick: number; pageSize: number }> | undefined;
/** Clock ticks per second and the page size, asked of getconf once (as pidusage did), else Linux's usual 100 and 4096. */
function systemConstants(): Promise<{ clockTick: number; pageSize: number }> {
  const ask = (name: string, fallback: number) => new Promise<number>((resolve) => {
    execFile('getconf', [name], (error, stdout) => {
      const value = Number.parseInt(String(stdout), 10);
      resolve(!error && value > 0 ? value : fallback);
    });
  });
  return constants ??= Promise.all([ask('CLK_TCK', 100), ask('PAGESIZE', 4096)]).then(([clockTick, pageSize]) => ({ clockTick, pageSize }));
}

const statBuffer = Buffer.alloc(4096);

/** What statFigures reads of a process, by these indexes into FIGURES. */
const STATE = 0, GROUP = 1, TICKS = 2, START_TICKS = 3, RSS_PAGES = 4;
const FIGURES = new Float64Array(5);
/** The fields after the command name that statFigures reads (state, pgrp, utime, stime, starttime, rss). */
const WANTED = new Map([[0, STATE], [2, GROUP], [11, TICKS], [12, TICKS], [19, START_TICKS], [21, RSS_PAGES]]);

/**
 * Reads /proc/<pid>/stat into FIGURES (the state as its character code, the group, user and
 * system ticks summed, the start time in ticks, resident pages); false when the process is gone.
 * The numbers are read from the bytes, with no string made: a sample reads every editor process
 * every 2 s, and splitting each line into its 52 fields was most of what a sample allocated.
 */
function statFigures(pid: number): boolean {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/stat`, 'r');
  } catch {
    return false;
  }
  let length: number;
  try {
    length = readSync(fd, statBuffer, 0, statBuffer.length, 0);
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
  // The command name may hold spaces and parentheses: the fields start after its last ')'.
  let at = statBuffer.lastIndexOf(0x29, length - 1);
  if (at < 0) return false;
  FIGURES.fill(0);
  at += 2;
  for (let field = 0; at < length && field <= 21; field++) {
    const slot = WANTED.get(field);
    let value = 0;
    if (field === 0) value = statBuffer[at];
    for (; at < length && statBuffer[at] !== 0x20 && statBuffer[at] !== 0x0a; at++) {
      if (field !== 0) value = value * 10 + (statBuffer[at] - 0x30);
    }
    if (slot !== undefined) FIGURES[slot] += value;
    at++;
  }
  return true;
}

/** Every process whose group leader is one of `leaders`, with its leader and figures. */
async function sampleGroups(leaders: Set<number>): Promise<Map<number, [number, ProcessSample]>> {
  const { clockTick, pageSize } = await systemConstants();
  const key = [...leaders].sort((a, b) => a - b).join(',');
  const full = lastScan === undefined || lastScan.leaders !== key || ++lastScan.samplesSince >= FULL_SCAN_EVERY;
  const pids: number[] = full ? [] : [...new Set([...leaders, ...lastScan!.members])];
  if (full) {
    for (const entry of await readdir('/proc')) {
      const pid = Number(entry);
      if (Number.isInteger(pid) && pid > 0) pids.push(pid);
    }
  }
  const samples = new Map<number, [number, ProcessSample]>();
  const seen = new Set<number>();
  for (let from = 0; from < pids.length; from += SLICE) {
    if (from > 0) await yieldToEventLoop();
    // The machine's uptime, read with each slice as pidusage read it with each process.
    const uptimeMs = Number.parseFloat(readFileSync('/proc/uptime', 'latin1')) * 1000;
    for (const pid of pids.slice(from, from + SLICE)) {
      if (!statFigures(pid)) continue;
      const leader = FIGURES[GROUP];
      const state = FIGURES[STATE];
      // A zombie uses nothing and is no longer running (as procfs's isAlive and groupExists have it).
      if (!leaders.has(leader) || state === 0x5a || state === 0x58) continue;
      const ticks = FIGURES[TICKS];
      const startTicks = FIGURES[START_TICKS];
      const last = history.get(pid);
      const seconds = last && last.startTicks === startTicks ? uptimeMs - last.uptimeMs : 0;
      // First seen: no interval yet, 0 % (pidusage's first figure came from two reads a moment apart: 0 as a rule).
      const cpu = seconds > 0 ? ((ticks - last!.ticks) * 1000 / clockTick / seconds) * 100 : 0;
      history.set(pid, { startTicks, ticks, uptimeMs });
      seen.add(pid);
      samples.set(pid, [leader, {
        cpu,
        memory: FIGURES[RSS_PAGES] * pageSize,
        ctime: (ticks * 1000) / clockTick,
        elapsed: uptimeMs - (startTicks * 1000) / clockTick,
      }]);
    }
  }
  for (const pid of history.keys()) if (!seen.has(pid)) history.delete(pid);
  if (full) lastScan = { leaders: key, members: [...samples.keys()], samplesSince: 0 };
  return samples;
}

// --- Elsewhere: pidusage ---

async function sampleWithPidusage(leaders: Set<number>): Promise<Map<number, [number, ProcessSample]>> {
  const members = groupMembers(leaders);
  const usage = await pidusage([...members.keys()]).catch(() => sampleOneByOne([...members.keys()]));
  const samples = new Map<number, [number, ProcessSample]>();
  for (const [pid, stat] of Object.entries(usage)) {
    const leader = members.get(Number(pid));
    if (stat && leader !== undefined) samples.set(Number(pid), [leader, stat]);
  }
  return samples;
}

/** pidusage rejects a whole batch when one pid is gone; then ask for each separately. */
async function sampleOneByOne(pids: number[]): Promise<Record<string, pidusage.Status | undefined>> {
  const out: Record<string, pidusage.Status | undefined> = {};
  await Promise.all(pids.map(async (pid) => {
    out[pid] = await pidusage(pid).catch(() => undefined);
  }));
  return out;
}

/** Maps every process whose group leader is one of `leaders` to that leader. */
function groupMembers(leaders: Set<number>): Map<number, number> {
  const members = new Map<number, number>();
  for (const pid of listPids()) {
    const pgid = readStat(pid)?.pgid;
    if (pgid !== undefined && leaders.has(pgid)) members.set(pid, pgid);
  }
  return members;
}

const round = (n: number) => Math.round(n * 100) / 100;
