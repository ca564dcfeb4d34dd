// The usage history as the service wires it: the real index (ServerTable) and the real stats
// sampler, whose runtime figures are given here, on a clock the test moves. Each sample lands in
// each running server's ring and the fleet's; idle stops are counted once each from the index's
// events; a deleted server's history goes, and so does one that aged out.
import { afterEach, describe, expect, it } from 'vitest';
import { ServerTable } from '../../src/index/server-table.ts';
import type { EditorServer, EditorServerStatus } from '../../src/manifests/types.ts';
import { ringGeometry, UsageHistory } from '../../src/metrics/usage-history.ts';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { StatsSampler } from '../../src/runtime/stats.ts';
import type { EditorUsage } from '../../src/runtime/usage.ts';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 29, 20, 0, 0);

function server(name: string, status: Partial<EditorServerStatus> = {}): EditorServer {
  return {
    apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer',
    metadata: { name, uid: `uid-${name}` },
    spec: { displayName: name, running: true },
    status: { phase: 'Running', ...status },
  } as EditorServer;
}

/** A fleet in the real index, sampled by the real sampler from figures the test sets. */
function fleet() {
  let now = T0;
  const table = new ServerTable({ nameOfUid: () => undefined, alive: () => true });
  const figures = new Map<string, EditorUsage>();
  const refs = new Map<string, RuntimeRef>();
  const stats = new StatsSampler(() => table.editorsToSample(), async (handles) => {
    const out = new Map<RuntimeRef, EditorUsage>();
    for (const [name, ref] of refs) if (handles.includes(ref) && figures.has(name)) out.set(ref, figures.get(name)!);
    return out;
  }, 60_000);
  const history = new UsageHistory({ historyMinutes: 10, bucketSeconds: 60 }, { index: table, stats, now: () => now });
  return {
    table, stats, history,
    run(name: string, cpuPercent: number, memoryMb: number) {
      if (!refs.has(name)) {
        const ref: RuntimeRef = { kind: 'process', pid: 1000 + refs.size, startTicks: 1 };
        refs.set(name, ref);
        table.setRecord({ name, server: server(name) });
        table.setEditor(name, ref, undefined);
      }
      figures.set(name, { cpuPercent, memoryMb, uptime: 1 });
    },
    stop(name: string, status: Partial<EditorServerStatus> = { phase: 'Stopped' }) {
      table.clearEditor(name);
      table.setRecord({ name, server: server(name, status) });
      table.changed(name);
    },
    at(ms: number) {
      now = ms;
    },
    sample: () => stats.sample(),
  };
}

let disposers: (() => void)[] = [];
afterEach(() => {
  for (const dispose of disposers.splice(0)) dispose();
});

function make() {
  const f = fleet();
  disposers.push(() => {
    f.history.dispose();
    f.stats.dispose();
  });
  return f;
}

describe('the usage history', () => {
  it('keeps each running server\'s CPU and memory, and the fleet\'s count and memory, per bucket', async () => {
    const f = make();
    f.run('alpha', 10, 200);
    f.run('beta', 50, 300);
    f.at(T0 + 1_000);
    await f.sample();
    f.run('alpha', 30, 220);
    f.at(T0 + 31_000);
    await f.sample();
    f.at(T0 + MINUTE + 1_000);
    f.run('alpha', 5, 210);
    f.stop('beta');
    await f.sample();

    const alpha = f.history.server('alpha');
    expect(alpha.bucket_seconds).toBe(60);
    expect(alpha.window_seconds).toBe(600);
    expect(alpha.points).toEqual([
      { time: new Date(T0).toISOString(), samples: 2, cpu_percent: { min: 10, avg: 20, max: 30 }, memory_mb: { min: 200, avg: 210, max: 220 } },
      { time: new Date(T0 + MINUTE).toISOString(), samples: 1, cpu_percent: { min: 5, avg: 5, max: 5 }, memory_mb: { min: 210, avg: 210, max: 210 } },
    ]);
    // beta ran in the first minute only: no point for the second.
    expect(f.history.server('beta').points.map((p) => p.samples)).toEqual([2]);
    const fleetUsage = f.history.fleet();
    expect(fleetUsage.points.map((p) => [p.running, p.memory_mb])).toEqual([
      [{ min: 2, avg: 2, max: 2 }, { min: 500, avg: 510, max: 520 }],
      [{ min: 1, avg: 1, max: 1 }, { min: 210, avg: 210, max: 210 }],
    ]);
  });

  it('reads a window of the last minutes, and no further back than it keeps', async () => {
    const f = make();
    f.run('alpha', 1, 100);
    for (let minute = 0; minute < 15; minute++) {
      f.at(T0 + minute * MINUTE + 1);
      await f.sample();
    }
    // Kept: 10 minutes (5 to 14). Asked for 3 minutes back from 14:00.001: buckets 11 to 14.
    expect(f.history.server('alpha').points).toHaveLength(10);
    expect(f.history.server('alpha', 3 * MINUTE).points.map((p) => p.time)).toEqual(
      [11, 12, 13, 14].map((m) => new Date(T0 + m * MINUTE).toISOString()),
    );
    expect(f.history.fleet(3 * MINUTE).window_seconds).toBe(180);
    // More than it keeps is the whole history.
    expect(f.history.server('alpha', 60 * MINUTE).window_seconds).toBe(600);
  });

  it('counts each idle stop once, in the bucket of its time, however often its status is written', async () => {
    const f = make();
    f.run('alpha', 1, 100);
    f.at(T0 + 2 * MINUTE + 5_000);
    await f.sample();
    const idle = { phase: 'Stopped' as const, reason: 'IdleTimeout', idleStoppedAt: new Date(T0 + 2 * MINUTE + 1_000).toISOString() };
    f.stop('alpha', idle);
    // The same stop written again (a later reconcile), and a stop for another reason: not counted.
    f.stop('alpha', idle);
    f.run('beta', 1, 100);
    f.stop('beta', { phase: 'Stopped' });
    const usage = f.history.fleet();
    expect(usage.idle_stops).toBe(1);
    expect(usage.points.find((p) => p.idle_stops > 0)?.time).toBe(new Date(T0 + 2 * MINUTE).toISOString());
    // Woken, idle again later: a second stop.
    f.run('alpha', 1, 100);
    f.at(T0 + 3 * MINUTE + 5_000);
    f.stop('alpha', { ...idle, idleStoppedAt: new Date(T0 + 3 * MINUTE).toISOString() });
    expect(f.history.fleet().idle_stops).toBe(2);
  });

  it('does not count an idle stop from before the service started (a status read at start-up)', () => {
    const f = make();
    f.stop('old', { phase: 'Stopped', reason: 'IdleTimeout', idleStoppedAt: new Date(T0 - MINUTE).toISOString() });
    expect(f.history.fleet().idle_stops).toBe(0);
  });

  it('drops a deleted server\'s history, and one whose every bucket aged out; its memory with them', async () => {
    const f = make();
    f.run('alpha', 1, 100);
    f.run('beta', 1, 100);
    f.at(T0);
    await f.sample();
    expect(f.history.servers).toBe(2);
    // The fleet's ring (ten buckets of 8 + 2 + 2 × 3 × 4 + 2 bytes) and one per server (the same without the idle stops' count).
    const fleetBytes = 10 * (8 + 2 + 2 * 3 * 4 + 2);
    expect(f.history.bytes).toBe(fleetBytes + 2 * 10 * 34);
    f.table.drop('alpha');
    f.table.deleted('alpha');
    expect(f.history.servers).toBe(1);
    expect(f.history.server('alpha').points).toEqual([]);
    // beta stops; ten minutes later nothing of it is left to show, and its ring goes.
    f.stop('beta');
    f.at(T0 + 11 * MINUTE);
    await f.sample();
    expect(f.history.servers).toBe(0);
    expect(f.history.bytes).toBe(fleetBytes);
  });

  it('widens its buckets rather than keep more than 10,080 of them', () => {
    expect(ringGeometry({ historyMinutes: 360, bucketSeconds: 60 })).toEqual({ bucketMs: 60_000, buckets: 360 });
    expect(ringGeometry({ historyMinutes: 10_080, bucketSeconds: 1 })).toEqual({ bucketMs: 60_000, buckets: 10_080 });
    expect(ringGeometry({ historyMinutes: 1, bucketSeconds: 1 })).toEqual({ bucketMs: 1000, buckets: 60 });
  });
});
