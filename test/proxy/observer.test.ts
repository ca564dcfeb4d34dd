// The proxy's observer (idle tracking and metrics read it): every proxied request and WebSocket
// is reported with its port, status and bytes, without changing a byte of what passes; a port
// with no route may be answered by the `unroutable` hook instead of the 404.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { ProxyObserver } from '../../src/proxy/index.ts';
import { eventually } from '../helpers/wait.ts';
import { opened } from '../helpers/net.ts';
import { request, startService, startTarget, type Service, type Target } from './fixtures.ts';

interface Seen {
  requests: Array<{ port: number; status: number; bytesIn: number; bytesOut: number }>;
  opened: number[];
  closed: number[];
  toEditor: number;
  toBrowser: number;
}

let target: Target;
let service: Service;
let seen: Seen;
let unroutableAsked: number[];

beforeEach(async () => {
  target = await startTarget();
  seen = { requests: [], opened: [], closed: [], toEditor: 0, toBrowser: 0 };
  unroutableAsked = [];
  const observer: ProxyObserver = {
    request: (port, status, bytesIn, bytesOut) => seen.requests.push({ port, status, bytesIn, bytesOut }),
    socketOpened: (port) => seen.opened.push(port),
    socketData: (port, bytes, fromClient) => {
      expect(port).toBe(target.port);
      if (fromClient) seen.toEditor += bytes;
      else seen.toBrowser += bytes;
    },
    socketClosed: (port) => seen.closed.push(port),
  };
  service = await startService((port) => port === target.port, {
    observer,
    unroutable: (port, _req, res) => {
      unroutableAsked.push(port);
      if (port !== 1) return false;
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('starting');
      return true;
    },
  });
});
afterEach(async () => {
  await service.close();
  await target.close();
});

describe('the proxy observer', () => {
  it('reports each HTTP request with its port, status and the bytes of its request and response', async () => {
    const body = 'x'.repeat(5000);
    const answer = await request(`${service.base}/vscode/${target.port}/echo`, { method: 'POST', body });
    expect(answer.text).toBe(body);
    await eventually(() => expect(seen.requests).toHaveLength(1));
    const [report] = seen.requests;
    expect(report.port).toBe(target.port);
    expect(report.status).toBe(200);
    expect(report.bytesIn).toBe(5000);
    // The response's headers are counted too.
    expect(report.bytesOut).toBeGreaterThan(5000);
    expect(report.bytesOut).toBeLessThan(6000);

    // Only proxied requests: an API path and a 404 for an unknown port are not the editor's traffic.
    await request(`${service.base}/servers`);
    expect((await request(`${service.base}/vscode/2/`)).status).toBe(404);
    expect(seen.requests).toHaveLength(1);
  });

  it('lets the unroutable hook answer a port with no route, and gives the 404 when it declines', async () => {
    const answered = await request(`${service.base}/vscode/1/some/page`);
    expect(answered).toMatchObject({ status: 200, text: 'starting' });
    const declined = await request(`${service.base}/editor/3/`);
    expect(declined.status).toBe(404);
    expect(JSON.parse(declined.text).error.code).toBe('EDITOR_NOT_FOUND');
    expect(unroutableAsked).toEqual([1, 3]);
    expect(target.hits).toBe(0);
  });

  it('reports a WebSocket opening, its bytes both ways and its closing, and every message still arrives', async () => {
    const socket = await opened(new WebSocket(`ws://127.0.0.1:${service.port}/vscode/${target.port}/ws`));
    expect(seen.opened).toEqual([target.port]);
    const replies: string[] = [];
    socket.on('message', (data) => replies.push(String(data)));
    // Sent at once after the open: nothing may be lost to the observer's listeners.
    for (let i = 0; i < 20; i++) socket.send(`message ${i} ${'y'.repeat(100)}`);
    await eventually(() => expect(replies).toHaveLength(20));
    expect(replies[19]).toBe(`echo /ws: message 19 ${'y'.repeat(100)}`);
    // Each client frame is masked and carries 100+ bytes; each echo is longer still.
    expect(seen.toEditor).toBeGreaterThanOrEqual(20 * 110);
    expect(seen.toBrowser).toBeGreaterThanOrEqual(20 * 115);
    expect(seen.closed).toEqual([]);
    socket.close();
    await eventually(() => expect(seen.closed).toEqual([target.port]));
  });
});
