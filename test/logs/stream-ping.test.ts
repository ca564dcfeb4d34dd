import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LogHub } from '../../src/logs/hub.ts';
import { SERVER, makeHub, makeLogsDir, startStreams } from './fixtures.ts';

describe('keeping log streams alive', () => {
  let logsDir: string;
  let hub: LogHub;
  let streams: Awaited<ReturnType<typeof startStreams>>;
  let sockets: WebSocket[];

  beforeEach(async () => {
    logsDir = makeLogsDir();
    hub = makeHub(logsDir);
    hub.track(SERVER);
    streams = await startStreams(hub, () => undefined, { pingIntervalMs: 150 });
    sockets = [];
  });

  afterEach(async () => {
    for (const socket of sockets) socket.terminate();
    await streams.close();
    await hub.close();
    fs.rmSync(logsDir, { recursive: true, force: true });
  });

  async function connect(autoPong: boolean): Promise<WebSocket> {
    const socket = new WebSocket(`${streams.base}/ws/logs`, { autoPong });
    sockets.push(socket);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return socket;
  }

  it('drops a client that stops answering pings and keeps one that answers', async () => {
    const answering = await connect(true);
    const silent = await connect(false);
    let pings = 0;
    answering.on('ping', () => pings++);
    const code = await new Promise<number>((resolve) => silent.once('close', (closeCode) => resolve(closeCode)));
    expect(code).toBe(1006); // terminated: no close handshake with a dead peer
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(pings).toBeGreaterThan(2);
    expect(answering.readyState).toBe(WebSocket.OPEN);
  });
});
