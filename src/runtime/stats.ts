// CPU, memory and uptime of running editors, sampled in the background with one batched
// pidusage call, so listing servers never waits on /proc.
import pidusage from 'pidusage';
import { listPids, readStat } from './procfs.ts';

export interface ProcessStats {
  cpuPercent: number;
  memoryMb: number;
  /** Seconds the process has been running. */
  uptime: number;
}

export class StatsSampler {
  private readonly pids: () => number[];
  private readonly intervalMs: number;
  private latest = new Map<number, ProcessStats>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(pids: () => number[], intervalMs = 2000) {
    this.pids = pids;
    this.intervalMs = intervalMs;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
    this.timer.unref();
    void this.sample();
  }

  get(pid: number | null | undefined): ProcessStats | undefined {
    return pid ? this.latest.get(pid) : undefined;
  }

  /**
   * One pidusage call for every process of every editor's group (code-server runs its server
   * in a child), summed per group leader. A pid that vanished meanwhile is left out.
   */
  async sample(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const leaders = new Set(this.pids());
      const next = new Map<number, ProcessStats>();
      if (leaders.size > 0) {
        const members = groupMembers(leaders);
        const usage = await pidusage([...members.keys()]).catch(() => sampleOneByOne([...members.keys()]));
        for (const [pid, stat] of Object.entries(usage)) {
          const leader = members.get(Number(pid));
          if (!stat || leader === undefined) continue;
          const total = next.get(leader) ?? { cpuPercent: 0, memoryMb: 0, uptime: 0 };
          total.cpuPercent = round(total.cpuPercent + stat.cpu);
          total.memoryMb = round(total.memoryMb + stat.memory / (1024 * 1024));
          if (Number(pid) === leader) total.uptime = stat.elapsed / 1000;
          next.set(leader, total);
        }
      }
      this.latest = next;
    } finally {
      this.running = false;
    }
  }

  dispose(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    pidusage.clear();
  }
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
