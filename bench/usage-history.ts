// What the usage history (src/metrics/usage-history.ts) costs: its memory per server and for a
// fleet, measured from the process (heap and array buffers, after a collection) with every bucket
// of the default six hours filled; what one stats sample costs it with every editor running; and
// what reading a server's whole history costs, with the answer's size.
// Run: node --expose-gc bench/usage-history.ts (the memory is measured after a collection).
import { performance } from 'node:perf_hooks';
import { TypedEvents } from '../src/index/typed-events.ts';
import type { IndexEvents } from '../src/index/server-index.ts';
import { UsageHistory } from '../src/metrics/usage-history.ts';
import { DEFAULT_CONFIG } from '../src/config/config-file.ts';

const gc = (globalThis as { gc?: () => void }).gc;

function memory(): { heap: number; arrays: number } {
  gc?.();
  gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return { heap: heapUsed, arrays: arrayBuffers };
}

/** A history of `servers` running editors with every bucket of its span filled; its costs. */
function measure(servers: number) {
  const { usageHistoryMinutes: historyMinutes, usageBucketSeconds: bucketSeconds } = DEFAULT_CONFIG.controller;
  const names = Array.from({ length: servers }, (_, i) => `server-${i}`);
  const figures = new Map(names.map((name, i) => [name, { cpuPercent: i % 100, memoryMb: 200 + (i % 50), uptime: 1 }]));
  let now = Date.UTC(2026, 10, 29);
  const index = Object.assign(new TypedEvents<IndexEvents>(), { running: () => names, serverNamed: () => undefined });
  const stats = { onSample: () => () => undefined, names: () => figures.keys(), get: (name: string) => figures.get(name) };
  const empty = new UsageHistory({ historyMinutes, bucketSeconds }, { index, stats });
  const fleetBytes = empty.bytes;
  empty.dispose();
  const before = memory();
  const history = new UsageHistory({ historyMinutes, bucketSeconds }, { index, stats, now: () => now });
  // One sample a bucket is enough to make every bucket hold figures; then a sample's cost, timed.
  const buckets = (historyMinutes * 60) / bucketSeconds;
  for (let b = 0; b < buckets; b++) {
    now += bucketSeconds * 1000;
    history.noticeSample();
  }
  const after = memory();
  // The median of 50 samples (one every 2 s, as the sampler takes them).
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    now += 2000;
    const started = performance.now();
    history.noticeSample();
    times.push(performance.now() - started);
  }
  const sampleMs = times.sort((a, b) => a - b)[25];
  // The median of 25 reads of a server's whole history, as the route answers it.
  let answer = '';
  const reads: number[] = [];
  for (let i = 0; i < 25; i++) {
    const readStarted = performance.now();
    answer = JSON.stringify({ status: 'success', data: history.server(names[i % names.length]) });
    reads.push(performance.now() - readStarted);
  }
  const readMs = reads.sort((a, b) => a - b)[12];
  const result = {
    servers,
    // The arrays alone: every server's ring, the fleet's one set aside.
    arrays_bytes_per_server: (history.bytes - fleetBytes) / servers,
    arrays_bytes: history.bytes,
    measured_bytes: after.heap + after.arrays - before.heap - before.arrays,
    measured_bytes_per_server: Math.round((after.heap + after.arrays - before.heap - before.arrays) / servers),
    sample_ms: Number(sampleMs.toFixed(3)),
    read_whole_history_ms: Number(readMs.toFixed(3)),
    answer_bytes: answer.length,
    points: buckets,
  };
  history.dispose();
  return result;
}

export function benchUsageHistory(): unknown {
  if (!gc) throw new Error('run with node --expose-gc: the memory is measured after a collection');
  return [measure(1), measure(1000)];
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(benchUsageHistory(), null, 2));
