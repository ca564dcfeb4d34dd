// Finding processes this service launched, in this run or an earlier one: live group leaders (a
// detached process leads its own group, and stopping it signals the group) that /proc shows with
// the command line and environment the service gave them. Each user says what it looks for (an
// editor: its folders and server name; the router: its program and the data folder's marker).
import { readFileSync } from 'node:fs';
import { listPids, readStat, type ProcessIdentity } from './procfs.ts';

/** The environment a process was started with, as NAME=value entries; undefined when unreadable. */
export function environOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

/** The value of `name` in the environment a process was started with; undefined when absent or unreadable. */
export function environValue(pid: number, name: string): string | undefined {
  const prefix = `${name}=`;
  return environOf(pid)?.find((entry) => entry.startsWith(prefix))?.slice(prefix.length);
}

/**
 * What `claim` says of pid when it is a live group leader; with its identity. The start time is
 * read again after `claim` looked at /proc: the pid must not have been reused meanwhile.
 */
export function groupLeader<T>(pid: number, claim: (pid: number) => T | undefined): { identity: ProcessIdentity; claimed: T } | undefined {
  const stat = readStat(pid);
  if (!stat || stat.pgid !== pid || stat.state === 'Z' || stat.state === 'X') return undefined;
  const claimed = claim(pid);
  if (claimed === undefined || readStat(pid)?.startTicks !== stat.startTicks) return undefined;
  return { identity: { pid, startTicks: stat.startTicks }, claimed };
}

/** Every live group leader on this machine (this service's own process aside) that `claim` accepts. */
export function findGroupLeaders<T>(claim: (pid: number) => T | undefined): Array<{ identity: ProcessIdentity; claimed: T }> {
  const found: Array<{ identity: ProcessIdentity; claimed: T }> = [];
  for (const pid of listPids()) {
    if (pid === process.pid) continue;
    const leader = groupLeader(pid, claim);
    if (leader) found.push(leader);
  }
  return found;
}
