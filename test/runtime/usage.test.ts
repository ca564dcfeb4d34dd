// Usage of an editor's process group read from /proc: the group's processes summed (code-server
// runs its server in a child), CPU over the time since the last sample, a leader gone left out,
// and the event loop let go during the scan.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { identityOf } from '../../src/core/procfs.ts';
import { clearUsageHistory, FULL_SCAN_EVERY, processGroupUsage } from '../../src/runtime/usage.ts';
import { eventually } from '../helpers/wait.ts';

const rssBytes = (pid: number) => Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096;
/** The process's CPU time (user and system) in clock ticks, from /proc. */
const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

let leader: ChildProcess | undefined;
afterEach(() => {
  if (leader?.pid) {
    try {
      process.kill(-leader.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  leader = undefined;
  clearUsageHistory();
});

/** A group of its own: a leader spinning the CPU, and a child of it in the same group that only sleeps. */
async function startGroup(): Promise<{ pid: number; child: number }> {
  const script = `
    const { spawn } = require('node:child_process');
    // Another child when asked (a process the editor starts later); listened for before the first pid is told.
    process.on('SIGUSR2', () => console.log(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }).pid));
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    console.log(child.pid);
    setInterval(() => { const end = Date.now() + 40; while (Date.now() < end); }, 50);
  `;
  leader = spawn(process.execPath, ['-e', script], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  const child = await new Promise<number>((resolve) => leader!.stdout!.once('data', (chunk) => resolve(Number(String(chunk).trim()))));
  // Both run once the child's pid is printed: its memory is there to count.
  await eventually(() => rssBytes(child) > 0);
  return { pid: leader.pid!, child };
}

describe.runIf(process.platform === 'linux')('process group usage', () => {
  it('sums the group, measures CPU since the last sample, and leaves out a leader gone', async () => {
    const { pid, child } = await startGroup();
    const identity = identityOf(pid)!;
    const first = (await processGroupUsage([identity])).get(identity)!;
    // First seen: no interval to measure CPU over yet.
    expect(first.cpuPercent).toBe(0);
    // The child's memory is in it (each is a Node.js process of tens of MB).
    expect(first.memoryBytes!).toBeGreaterThan(rssBytes(pid) + rssBytes(child) / 2);
    expect(first.memoryMb).toBeCloseTo(first.memoryBytes! / 1024 / 1024, 1);
    expect(first.uptime).toBeGreaterThan(0);
    expect(first.uptime).toBeLessThan(30);
    expect(first.cpuSeconds!).toBeGreaterThan(0);

    // Measured over an interval in which the leader has used at least half a second of CPU.
    const ticks = cpuTicks(pid);
    await eventually(() => cpuTicks(pid) >= ticks + 60, 20_000);
    const second = (await processGroupUsage([identity])).get(identity)!;
    // The leader spins 40 ms of every 50.
    expect(second.cpuPercent).toBeGreaterThan(30);
    expect(second.cpuPercent).toBeLessThan(200);
    expect(second.cpuSeconds!).toBeGreaterThan(first.cpuSeconds!);
    expect(second.uptime).toBeGreaterThan(first.uptime + 0.5);

    process.kill(-pid, 'SIGKILL');
    await new Promise((r) => leader!.once('exit', r));
    // The child, killed with its group, may linger a moment as a zombie, which counts for nothing.
    expect(await eventually(async () => (await processGroupUsage([identity])).size === 0)).toBe(true);
  });

  it('reads every process on the machine only every few samples, and counts a process started since from the next such look', async () => {
    const { pid, child } = await startGroup();
    const identity = identityOf(pid)!;
    await processGroupUsage([identity]); // the first sample of these editors: a full look
    const started = new Promise<number>((resolve) => leader!.stdout!.once('data', (chunk) => resolve(Number(String(chunk).trim()))));
    process.kill(pid, 'SIGUSR2');
    const late = await started;
    // Up and running (a Node.js process holds tens of MB once started), so its memory no longer races ahead.
    await eventually(() => rssBytes(late) > 15 * 1024 * 1024);
    // Each sample beside what the group held without and with the new child at that moment.
    const samples: Array<{ sample: number; without: number; late: number }> = [];
    for (let i = 0; i < FULL_SCAN_EVERY; i++) {
      const without = rssBytes(pid) + rssBytes(child);
      const lateBytes = rssBytes(late);
      samples.push({ sample: (await processGroupUsage([identity])).get(identity)!.memoryBytes!, without, late: lateBytes });
    }
    // The samples between full looks read the members found at the last one: not the new child…
    for (const { sample, without, late } of samples.slice(0, -1)) expect(sample).toBeLessThan(without + late / 2);
    // …which the next full look finds.
    const last = samples.at(-1)!;
    expect(last.sample).toBeGreaterThan(last.without + last.late / 2);
  });

  it('lets the event loop run between slices of the scan', async () => {
    const { pid } = await startGroup();
    const identity = identityOf(pid)!;
    let turns = 0;
    let done = false;
    const tick = () => {
      turns++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    await processGroupUsage([identity]);
    done = true;
    // Every process on the machine is read (the test's own, its workers, the group's): more than one slice.
    expect(turns).toBeGreaterThan(1);
  });
});
