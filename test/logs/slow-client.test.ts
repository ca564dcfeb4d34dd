import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { FakeEditorOutput, SERVER, useLogStreams, waitFor } from './fixtures.ts';

describe('a slow log stream client', () => {
  const ctx = useLogStreams({
    // No rate limit: every one of the 20,000 lines written at once must reach the fast client.
    hubOptions: { maxFileBytes: 64 * 1024 * 1024, rateLimit: { linesPerSec: 0 } },
    // A ping period longer than the test, so only the send-buffer limit can close the slow client.
    streamOptions: { maxBufferedBytes: 256 * 1024, pingIntervalMs: 60_000 },
  });

  async function connect(): Promise<{ socket: WebSocket; received: number[] }> {
    const received: number[] = [];
    const socket = new WebSocket(`${ctx.streams.base}/ws/logs/${SERVER.id}?tail=0`);
    ctx.sockets.push(socket);
    socket.on('message', (data) => received.push(Number(JSON.parse(data.toString()).message.split(' ')[0])));
    await opened(socket);
    return { socket, received };
  }

  it('is closed with 1013 while a fast client receives every line', async () => {
    const fast = await connect();
    const slow = await connect();
    slow.socket.pause(); // stops reading: its TCP window fills, then the server-side buffer

    // 20,000 lines of 1 KB: far more than the kernel buffers of a loopback connection hold.
    const total = 20_000;
    const editor = new FakeEditorOutput(ctx.hub.rawPaths(SERVER.name).stdout);
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
