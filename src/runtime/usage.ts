// CPU and memory of editor processes: one batched pidusage call for every process of every
// editor's group (code-server runs its server in a child), summed per group leader.
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

/** Usage per editor (group leader); one that vanished meanwhile is left out. */
export async function processGroupUsage(leaders: ProcessIdentity[]): Promise<Map<ProcessIdentity, EditorUsage>> {
  const byPid = new Map(leaders.map((l) => [l.pid, l]));
  const next = new Map<ProcessIdentity, Required<EditorUsage>>();
  if (byPid.size === 0) return next;
  const members = groupMembers(new Set(byPid.keys()));
  const usage = await pidusage([...members.keys()]).catch(() => sampleOneByOne([...members.keys()]));
  for (const [pid, stat] of Object.entries(usage)) {
    const leader = members.get(Number(pid));
    if (!stat || leader === undefined) continue;
    const handle = byPid.get(leader)!;
    const total = next.get(handle) ?? { cpuPercent: 0, memoryMb: 0, uptime: 0, cpuSeconds: 0, memoryBytes: 0 };
    total.cpuPercent = round(total.cpuPercent + stat.cpu);
    total.memoryMb = round(total.memoryMb + stat.memory / (1024 * 1024));
    total.cpuSeconds += stat.ctime / 1000;
    total.memoryBytes += stat.memory;
    if (Number(pid) === leader) total.uptime = stat.elapsed / 1000;
    next.set(handle, total);
  }
  return next;
}

/** Forgets pidusage's per-process history (the service stops). */
export function clearUsageHistory(): void {
  pidusage.clear();
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
