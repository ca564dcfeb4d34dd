import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { SERVER, useLogStreams, waitFor } from './fixtures.ts';

describe('replay on connect', () => {
  const ctx = useLogStreams({
    before: (hub) => {
      for (let i = 0; i < 150; i++) hub.event(SERVER.name, 'INFO', `before ${i}`);
    },
  });

  async function messages(path: string): Promise<string[]> {
    const received: string[] = [];
    const socket = new WebSocket(`${ctx.streams.base}${path}`);
    ctx.sockets.push(socket);
    socket.on('message', (data) => received.push(JSON.parse(data.toString()).message));
    await opened(socket);
    return received;
  }

  it('replays the last ?tail lines in order, then streams new ones', async () => {
    const received = await messages(`/ws/logs/${SERVER.id}?tail=3`);
    ctx.hub.event(SERVER.name, 'INFO', 'after');
    await waitFor(() => received.length === 4);
    expect(received).toEqual(['before 147', 'before 148', 'before 149', 'after']);
  });

  it('replays 100 lines by default, in the same frames as live ones', async () => {
    const received = await messages('/ws/logs');
    await waitFor(() => received.length === 100);
    expect(received[0]).toBe('before 50');
    expect(received[99]).toBe('before 149');
  });

  it('replays nothing with tail=0', async () => {
    const received = await messages(`/ws/logs/${SERVER.id}?tail=0`);
    ctx.hub.event(SERVER.name, 'INFO', 'live');
    await waitFor(() => received.length === 1);
    expect(received).toEqual(['live']);
  });
});
