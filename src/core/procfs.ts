// Process facts from /proc: the start time that makes a pid an identity, groups, children, cmdlines.
import { readdirSync, readFileSync } from 'node:fs';

/** A pid is trusted only together with its start time, so a reused pid is never mistaken for ours. */
export interface ProcessIdentity {
  pid: number;
  startTicks: number;
}

interface Stat {
  ppid: number;
  pgid: number;
  state: string;
  startTicks: number;
}

export function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: split after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0], ppid: Number(fields[1]), pgid: Number(fields[2]), startTicks: Number(fields[19]) };
}

/** True when the process with this identity exists and is not a zombie. */
export function isAlive(identity: ProcessIdentity): boolean {
  const stat = readStat(identity.pid);
  return stat !== undefined && stat.startTicks === identity.startTicks && stat.state !== 'Z' && stat.state !== 'X';
}

export function identityOf(pid: number): ProcessIdentity | undefined {
  const stat = readStat(pid);
  return stat ? { pid, startTicks: stat.startTicks } : undefined;
}

export function readCmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((s) => s !== '');
  } catch {
    return [];
  }
}

export function listPids(): number[] {
  return readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
}

/** Every live descendant of pid (any session or group), found by walking parent links. */
export function descendants(pid: number): ProcessIdentity[] {
  const children = new Map<number, number[]>();
  const stats = new Map<number, Stat>();
  for (const p of listPids()) {
    const stat = readStat(p);
    if (!stat) continue;
    stats.set(p, stat);
    const list = children.get(stat.ppid) ?? [];
    list.push(p);
    children.set(stat.ppid, list);
  }
  const found: ProcessIdentity[] = [];
  const todo = [...(children.get(pid) ?? [])];
  while (todo.length > 0) {
    const p = todo.pop()!;
    const stat = stats.get(p)!;
    if (stat.state !== 'Z') found.push({ pid: p, startTicks: stat.startTicks });
    todo.push(...(children.get(p) ?? []));
  }
  return found;
}

/**
 * True while any live process is in the group. Zombies do not count: an editor orphaned by a
 * killed controller is reaped by init, which may take its time.
 */
export function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const live = (stat: Stat | undefined) => stat !== undefined && stat.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X';
  // The usual case, a live leader, costs one read; only a leaderless group needs the scan.
  return live(readStat(pgid)) || listPids().some((pid) => live(readStat(pid)));
}
