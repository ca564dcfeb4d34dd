import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { useLogStreams, waitFor } from './fixtures.ts';

describe('keeping log streams alive', () => {
  const ctx = useLogStreams({ streamOptions: { pingIntervalMs: 400 } });

  async function connect(autoPong: boolean): Promise<WebSocket> {
    const socket = new WebSocket(`${ctx.streams.base}/ws/logs`, { autoPong });
    ctx.sockets.push(socket);
    await opened(socket);
    return socket;
  }

  it('drops a client that stops answering pings and keeps one that answers', async () => {
    const answering = await connect(true);
    const silent = await connect(false);
    let pings = 0;
    answering.on('ping', () => pings++);
    const code = await new Promise<number>((resolve) => silent.once('close', (closeCode) => resolve(closeCode)));
    expect(code).toBe(1006); // terminated: no close handshake with a dead peer
    // The answering client keeps getting pings (three more rounds) and stays open throughout.
    const seen = pings;
    await waitFor(() => pings >= seen + 3 || answering.readyState !== WebSocket.OPEN);
    expect(answering.readyState).toBe(WebSocket.OPEN);
  });
});
