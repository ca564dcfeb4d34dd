// Log fan-out benchmark: an editor writing 10,000 lines a second to editor.out while 10 WebSocket
// clients follow the stream; reports the lines each client missed and the service's memory.
// Lines the service's rate limit drops (LogHub's rateLimit, 5,000 lines/s by default) are not
// missed: the marker entries on the stream count them ("… 12,345 lines dropped (rate limit …)"),
// and a client has lost a line only when it neither received it nor was told it was dropped.
//
//   node bench/logs.ts [seconds]
//
// builds its own setup: the service part (LogHub, LogStreamServer, an HTTP server) in its own
// process, the writer and the clients in this one.

import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { LogHub } from '../src/logs/hub.ts';
import { LogStreamServer } from '../src/logs/stream.ts';
import { opened } from '../test/helpers/net.ts';

export interface BenchLogFanoutOptions {
  /** The stream to follow, e.g. ws://127.0.0.1:8000/ws/logs/{id}. */
  wsUrl: string;
  /** The editor.out the service follows for that server. */
  editorOut: string;
  /** Default 30. */
  durationSec?: number;
  /** Default 10,000. */
  linesPerSec?: number;
  /** Default 10. */
  clients?: number;
  /** How long to wait for the clients to catch up after the last line. Default 10 s. */
  drainTimeoutSec?: number;
  /** The service's resident memory in MB, read before and after the run when given. */
  serviceRssMb?: () => number | Promise<number>;
}

interface Follower {
  seen: Uint8Array;
  received: number;
  duplicates: number;
  /** Lines the markers on the stream said the rate limit dropped. */
  reportedDropped: number;
  closeCode: number | undefined;
}

const MARKER = /"message":"… ([\d,]+) lines? dropped \(rate limit /;

/** Lines written and lost per client, clients closed for being slow, and the service's memory. */
export async function benchLogFanout(options: BenchLogFanoutOptions): Promise<Record<string, number>> {
  const { durationSec = 30, linesPerSec = 10_000, clients = 10, drainTimeoutSec = 10 } = options;
  const expected = Math.ceil(durationSec * linesPerSec);
  // A token per run, so replayed or unrelated lines are not counted.
  const marker = `fanout-${process.pid}-${Date.now()} `;
  const padding = 'x'.repeat(60);
  const rssBefore = await options.serviceRssMb?.();

  const followers: Follower[] = [];
  const sockets: WebSocket[] = [];
  for (let i = 0; i < clients; i++) {
    const follower: Follower = { seen: new Uint8Array(expected), received: 0, duplicates: 0, reportedDropped: 0, closeCode: undefined };
    const socket = new WebSocket(`${options.wsUrl}${options.wsUrl.includes('?') ? '&' : '?'}tail=0`);
    socket.on('message', (data) => {
      // Cheaper than JSON.parse for 100,000 frames a second in one process.
      const text = data.toString();
      const at = text.indexOf(marker);
      if (at < 0) {
        const dropped = MARKER.exec(text);
        if (dropped) follower.reportedDropped += Number(dropped[1].replaceAll(',', ''));
        return;
      }
      const seq = Number.parseInt(text.slice(at + marker.length, at + marker.length + 12), 10);
      if (follower.seen[seq]) follower.duplicates++;
      else follower.received++;
      follower.seen[seq] = 1;
    });
    socket.on('close', (code) => (follower.closeCode = code));
    await opened(socket);
    followers.push(follower);
    sockets.push(socket);
  }

  // The editor: one O_APPEND descriptor, writing on a 10 ms tick whatever the rate calls for by then.
  const fd = fs.openSync(options.editorOut, 'a');
  let written = 0;
  const start = performance.now();
  while (written < expected) {
    const due = Math.min(expected, Math.floor(((performance.now() - start) / 1000) * linesPerSec));
    let chunk = '';
    for (; written < due; written++) chunk += `${marker}${written} ${padding}\n`;
    if (chunk) fs.writeSync(fd, chunk);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  fs.closeSync(fd);
  const writeSeconds = (performance.now() - start) / 1000;

  const drainStart = performance.now();
  const open = () => followers.filter((follower) => follower.closeCode === undefined);
  const accounted = (follower: Follower) => follower.received + follower.reportedDropped;
  while (open().some((follower) => accounted(follower) < expected) && performance.now() - drainStart < drainTimeoutSec * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const caughtUpSec = (performance.now() - drainStart) / 1000;
  for (const socket of sockets) socket.close();
  const rssAfter = await options.serviceRssMb?.();

  const lost = followers.map((follower) => expected - accounted(follower));
  const stayedOpen = open();
  return {
    linesWritten: written,
    linesPerSecAchieved: Math.round(written / writeSeconds),
    clients,
    clientsClosedAsSlow: followers.filter((follower) => follower.closeCode === 1013).length,
    // Neither received nor reported dropped by a marker.
    linesLostByOpenClients: stayedOpen.reduce((sum, follower) => sum + expected - accounted(follower), 0),
    maxLinesLostByOneClient: Math.max(...lost),
    linesReceivedPerClient: Math.min(...followers.map((follower) => follower.received)),
    linesDroppedByRateLimit: Math.max(...followers.map((follower) => follower.reportedDropped)),
    duplicateLines: followers.reduce((sum, follower) => sum + follower.duplicates, 0),
    secondsToCatchUpAfterLastLine: Math.round(caughtUpSec * 100) / 100,
    ...(rssBefore !== undefined && rssAfter !== undefined ? { serviceRssBeforeMb: rssBefore, serviceRssAfterMb: rssAfter } : {}),
  };
}

// --- The standalone setup -------------------------------------------------------------------

const SERVER = { name: 'bench', id: '00000000-0000-4000-8000-00000000bench', displayName: 'Bench' };

/** The service's log part with its default limits, on a temporary folder. */
async function serveLogs(): Promise<{ port: number; editorOut: string; close: () => void }> {
  const logsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devbox-bench-logs-'));
  const hub = new LogHub({ logsDir });
  hub.track(SERVER);
  const streams = new LogStreamServer(hub, (id) => (id === SERVER.id ? SERVER : undefined));
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req, socket, head) => {
    if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    editorOut: hub.rawPaths(SERVER.name).stdout,
    close: () => fs.rmSync(logsDir, { recursive: true, force: true }),
  };
}

const megabytes = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

function askMemory(child: ChildProcess): Promise<{ rssMb: number; heapUsedMb: number }> {
  return new Promise((resolve) => {
    child.once('message', (answer) => resolve(answer as { rssMb: number; heapUsedMb: number }));
    child.send('memory');
  });
}

async function main(): Promise<void> {
  if (process.argv[2] === 'service') {
    const service = await serveLogs();
    process.on('message', () => {
      globalThis.gc?.(); // count what is kept, not garbage not yet collected
      const { rss, heapUsed } = process.memoryUsage();
      process.send?.({ rssMb: megabytes(rss), heapUsedMb: megabytes(heapUsed) });
    });
    process.on('disconnect', () => {
      service.close();
      process.exit(0);
    });
    process.send?.({ port: service.port, editorOut: service.editorOut });
    return;
  }
  const durationSec = Number(process.argv[2]) || 30;
  const child = fork(fileURLToPath(import.meta.url), ['service'], { execArgv: ['--expose-gc'], stdio: 'inherit' });
  try {
    const { port, editorOut } = await new Promise<{ port: number; editorOut: string }>((resolve, reject) => {
      child.once('message', (message) => resolve(message as { port: number; editorOut: string }));
      child.once('exit', (code) => reject(new Error(`the service exited with ${code}`)));
    });
    const heapUsedMb: number[] = [];
    const figures = await benchLogFanout({
      wsUrl: `ws://127.0.0.1:${port}/ws/logs/${SERVER.id}`,
      editorOut,
      durationSec,
      serviceRssMb: async () => {
        const memory = await askMemory(child);
        heapUsedMb.push(memory.heapUsedMb);
        return memory.rssMb;
      },
    });
    console.log(JSON.stringify({ ...figures, serviceHeapUsedBeforeMb: heapUsedMb[0], serviceHeapUsedAfterMb: heapUsedMb[1] }, null, 2));
  } finally {
    child.disconnect();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
