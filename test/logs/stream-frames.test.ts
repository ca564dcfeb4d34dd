import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { FakeEditorOutput, OTHER, SERVER, useLogStreams, waitFor } from './fixtures.ts';

describe('the live log streams', () => {
  const ctx = useLogStreams({ servers: [SERVER, OTHER] });

  /** Connects and collects every frame, parsed, after checking each is a JSON text frame. */
  async function connect(path: string): Promise<Record<string, unknown>[]> {
    const frames: Record<string, unknown>[] = [];
    const socket = new WebSocket(`${ctx.streams.base}${path}`);
    ctx.sockets.push(socket);
    socket.on('message', (data, isBinary) => {
      expect(isBinary).toBe(false);
      frames.push(JSON.parse(data.toString()));
    });
    await opened(socket);
    return frames;
  }

  it('sends one JSON text frame per line with exactly the fields of the interface', async () => {
    const frames = await connect(`/ws/logs/${SERVER.id}?tail=0`);
    const stderr = new FakeEditorOutput(ctx.hub.rawPaths(SERVER.name).stderr);
    try {
      stderr.write('extension host terminated unexpectedly\n');
      await waitFor(() => frames.length === 1);
    } finally {
      stderr.close();
    }
    const [frame] = frames;
    expect(Object.keys(frame).sort()).toEqual(
      ['level', 'message', 'server_id', 'server_name', 'source', 'timestamp', 'type'].sort(),
    );
    expect(frame.type).toBe('log');
    expect(frame.server_id).toBe(SERVER.id);
    expect(frame.server_name).toBe(SERVER.displayName);
    expect(frame.level).toBe('WARN');
    expect(frame.source).toBe('server');
    expect(frame.message).toBe('extension host terminated unexpectedly');
    expect(typeof frame.timestamp).toBe('string');
    expect(new Date(frame.timestamp as string).toISOString()).toBe(frame.timestamp);
  });

  it('streams one server on /ws/logs/{id} and every server on /ws/logs', async () => {
    const one = await connect(`/ws/logs/${OTHER.id}?tail=0`);
    const all = await connect('/ws/logs?tail=0');
    ctx.hub.event(SERVER.name, 'INFO', 'started');
    ctx.hub.event(OTHER.name, 'ERROR', 'crashed');
    await waitFor(() => all.length === 2 && one.length === 1);
    expect(one).toEqual([expect.objectContaining({ server_id: OTHER.id, level: 'ERROR', source: 'controller', message: 'crashed' })]);
    expect(all.map((frame) => [frame.server_name, frame.message])).toEqual([
      ['Data pipeline', 'started'],
      ['Notebook', 'crashed'],
    ]);
  });
});
