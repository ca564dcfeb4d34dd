import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LogHub } from '../../src/logs/hub.ts';
import { FakeEditorOutput, SERVER, makeHub, makeLogsDir, startStreams, waitFor } from './fixtures.ts';

describe('a slow log stream client', () => {
  let logsDir: string;
  let hub: LogHub;
  let streams: Awaited<ReturnType<typeof startStreams>>;
  let sockets: WebSocket[];

  beforeEach(async () => {
    logsDir = makeLogsDir();
    hub = makeHub(logsDir, { maxFileBytes: 64 * 1024 * 1024 });
    hub.track(SERVER);
    // A ping period longer than the test, so only the send-buffer limit can close the slow client.
    streams = await startStreams(hub, (id) => (id === SERVER.id ? SERVER : undefined), {
      maxBufferedBytes: 256 * 1024,
      pingIntervalMs: 60_000,
    });
    sockets = [];
  });

  afterEach(async () => {
    for (const socket of sockets) socket.terminate();
    await streams.close();
    await hub.close();
    fs.rmSync(logsDir, { recursive: true, force: true });
  });

  async function connect(): Promise<{ socket: WebSocket; received: number[] }> {
    const received: number[] = [];
    const socket = new WebSocket(`${streams.base}/ws/logs/${SERVER.id}?tail=0`);
    sockets.push(socket);
    socket.on('message', (data) => received.push(Number(JSON.parse(data.toString()).message.split(' ')[0])));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return { socket, received };
  }

  it('is closed with 1013 while a fast client receives every line', async () => {
    const fast = await connect();
    const slow = await connect();
    slow.socket.pause(); // stops reading: its TCP window fills, then the server-side buffer

    // 20,000 lines of 1 KB: far more than the kernel buffers of a loopback connection hold.
    const total = 20_000;
    const editor = new FakeEditorOutput(hub.rawPaths(SERVER.name).stdout);
    try {
      for (let i = 0; i < total; i += 1000) {
        let chunk = '';
        for (let j = i; j < i + 1000; j++) chunk += `${j} ${'x'.repeat(1000)}\n`;
        editor.write(chunk);
      }
    } finally {
      editor.close();
    }
    await waitFor(() => fast.received.length === total, 25_000);
    expect(fast.received).toEqual(Array.from({ length: total }, (_, i) => i));

    const closed = new Promise<number>((resolve) => slow.socket.once('close', (code) => resolve(code)));
    slow.socket.resume(); // read what was queued before the close frame
    expect(await closed).toBe(1013);
    expect(slow.received.length).toBeLessThan(total);
    expect(fast.socket.readyState).toBe(WebSocket.OPEN);
  });
});
