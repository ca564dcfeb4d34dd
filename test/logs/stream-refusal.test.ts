import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { SERVER, useLogStreams } from './fixtures.ts';

describe('refusing a log stream', () => {
  const ctx = useLogStreams();

  /** The HTTP answer to an upgrade request that the server refused. */
  function refusal(path: string): Promise<{ status: number; body: string; upgraded: boolean }> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(`${ctx.streams.base}${path}`);
      socket.once('open', () => {
        socket.terminate();
        resolve({ status: 101, body: '', upgraded: true });
      });
      socket.once('unexpected-response', (req, res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body, upgraded: false });
        });
      });
      socket.once('error', (err) => {
        if (!/Unexpected server response/.test(err.message)) reject(err);
      });
    });
  }

  it('answers an unknown server id with 404 before any upgrade', async () => {
    const answer = await refusal('/ws/logs/00000000-0000-4000-8000-000000000000');
    expect(answer.upgraded).toBe(false);
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.body).error).toMatchObject({ code: 'SERVER_NOT_FOUND' });
    expect(JSON.parse(answer.body).error.message).toContain('00000000-0000-4000-8000-000000000000');
  });

  it('answers a tail that is not a whole number with 400', async () => {
    const answer = await refusal(`/ws/logs/${SERVER.id}?tail=lots`);
    expect(answer).toMatchObject({ status: 400, upgraded: false });
    expect(JSON.parse(answer.body).error.code).toBe('INVALID_TAIL');
  });

  it('leaves paths other than the log streams to the caller', () => {
    const request = { url: '/vscode/8012/' } as IncomingMessage;
    expect(ctx.streams.streams.handleUpgrade(request, undefined as never, Buffer.alloc(0))).toBe(false);
  });
});
