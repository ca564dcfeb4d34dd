// The child process of bench/log-cost.ts's pipeline setup: the service's log part as
// service-parts.ts wires it (LogHub with 256 KiB of history per server, LogStreamServer, and a
// per-entry subscriber as the metrics have), behind an HTTP server on 127.0.0.1, port 0. It
// answers 'begin' and 'end' over IPC with its CPU time (process.cpuUsage) and event-loop delay
// (monitorEventLoopDelay, 1 ms resolution: a figure includes that 1 ms) between the two.
//
// BENCH_LOGS_SRC: another folder of the log modules (an older copy, say) to measure instead of src/logs.

import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type * as HubModule from '../src/logs/hub.ts';
import type * as StreamModule from '../src/logs/stream.ts';

export const NOISY = { name: 'noisy', id: '00000000-0000-4000-8000-0000000noisy', displayName: 'Noisy' };
export const QUIET = { name: 'quiet', id: '00000000-0000-4000-8000-0000000quiet', displayName: 'Quiet' };

export interface PhaseFigures {
  cpuUs: number;
  wallMs: number;
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  entries: number;
  /** The hub's own count of lines its rate limit dropped, when it has one. */
  droppedByHub?: number;
}

async function main(): Promise<void> {
  const source = process.env.BENCH_LOGS_SRC ? pathToFileURL(`${path.resolve(process.env.BENCH_LOGS_SRC)}/`) : new URL('../src/logs/', import.meta.url);
  const { LogHub } = (await import(new URL('hub.ts', source).href)) as typeof HubModule;
  const { LogStreamServer } = (await import(new URL('stream.ts', source).href)) as typeof StreamModule;
  const logsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devbox-bench-logcost-'));
  const hub = new LogHub({ logsDir, maxBufferBytes: 256 * 1024 });
  hub.track(NOISY);
  hub.track(QUIET);
  const streams = new LogStreamServer(hub, (id) => [NOISY, QUIET].find((server) => server.id === id));
  // As the metrics count entries: one call per entry.
  const counts = new Map<string, number>();
  let entries = 0;
  hub.subscribe(null, (entry) => {
    entries++;
    counts.set(entry.name, (counts.get(entry.name) ?? 0) + 1);
  });
  const server = http.createServer((_req, res) => res.end('ok'));
  server.on('upgrade', (req, socket, head) => {
    if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const droppedNow = (): number | undefined => (hub as unknown as { state?: { lines_dropped: number } }).state?.lines_dropped;
  let began = { cpu: process.cpuUsage(), at: performance.now(), entries: 0, dropped: droppedNow() };
  process.on('message', (message: string) => {
    if (message === 'begin') {
      delay.reset();
      began = { cpu: process.cpuUsage(), at: performance.now(), entries, dropped: droppedNow() };
      process.send!('begun');
    } else if (message === 'end') {
      const used = process.cpuUsage(began.cpu);
      const dropped = droppedNow();
      const figures: PhaseFigures = {
        cpuUs: used.user + used.system,
        wallMs: performance.now() - began.at,
        loopDelayP50Ms: delay.percentile(50) / 1e6,
        loopDelayP99Ms: delay.percentile(99) / 1e6,
        loopDelayMaxMs: delay.max / 1e6,
        entries: entries - began.entries,
        ...(dropped !== undefined && { droppedByHub: dropped - (began.dropped ?? 0) }),
      };
      process.send!(figures);
    }
  });
  process.on('disconnect', () => {
    void hub.close().finally(() => {
      fs.rmSync(logsDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send!({ port: (server.address() as AddressInfo).port, editorOut: hub.rawPaths(NOISY.name).stdout });
}

if (process.send) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
