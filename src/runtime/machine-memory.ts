// The memory editors of the process runtime share: this machine's, or its container's.
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';

const MB = 1024 * 1024;

/** The memory this machine (or its container) has, and where the figure came from. */
export interface MachineMemory {
  totalMb: number;
  source: string;
}

/**
 * The memory of this machine: os.totalmem(), or the cgroup's limit when it is lower (a container,
 * such as a Databricks app's 6 GB on a larger host).
 */
export function machineMemory(read: (path: string) => string = (path) => readFileSync(path, 'utf8')): MachineMemory {
  const os = Math.round(totalmem() / MB);
  for (const path of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    let text: string;
    try {
      text = read(path).trim();
    } catch {
      continue;
    }
    // "max" (v2) or a huge number (v1) mean no limit.
    if (!/^\d+$/.test(text)) continue;
    const mb = Math.round(Number(text) / MB);
    if (mb > 0 && mb < os) return { totalMb: mb, source: `the cgroup limit in ${path}` };
  }
  return { totalMb: os, source: "this machine's memory (os.totalmem())" };
}
