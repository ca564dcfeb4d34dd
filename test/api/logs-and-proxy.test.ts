// Logs over REST and WebSocket, and the editor proxy, through the running service.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let id: string;
let port: number;

beforeAll(async () => {
  service = await startTestService();
  const created = await service.request('POST', '/servers', { name: 'Logged' });
  ({ id, port } = created.body);
  await service.request('POST', `/servers/${id}/start`);
});
afterAll(async () => {
  await service?.stop();
});

const wsUrl = (path: string) => service.url.replace('http', 'ws') + path;

function collect(ws: WebSocket, until: (frames: any[]) => boolean, timeoutMs = 5000): Promise<any[]> {
  const frames: any[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`got ${frames.length} frames: ${JSON.stringify(frames.slice(-3))}`)), timeoutMs);
    ws.on('message', (data) => {
      frames.push(JSON.parse(String(data)));
      if (until(frames)) {
        clearTimeout(timer);
        resolve(frames);
      }
    });
    ws.on('error', reject);
  });
}

describe('GET /servers/{id}/logs', () => {
  it('returns formatted lines with timestamp, level and text, newest last', async () => {
    const res = await eventually(async () => {
      const r = await service.request('GET', `/servers/${id}/logs`);
      const logs: string[] = r.body.data.logs;
      // stdout and stderr are read separately: wait until both lines are in.
      return logs.some((l) => l.includes('[WARN]') && l.includes('a warning on stderr'))
        && logs.some((l) => l.includes('[INFO] [server] [stub] HTTP server listening')) ? r : undefined;
    });
    expect(res.body.status).toBe('success');
    const logs: string[] = res.body.data.logs;
    expect(logs.length).toBeLessThanOrEqual(50);
    for (const line of logs) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(INFO|WARN|ERROR)\] /);
    expect(logs.some((l) => l.includes('[INFO] [server] [stub] HTTP server listening'))).toBe(true);
    expect(logs.some((l) => l.includes('[controller]') && l.includes('starting'))).toBe(true);
    const stamps = logs.map((l) => l.slice(0, 24));
    expect([...stamps].sort()).toEqual(stamps);
  });

  it('honours lines and refuses anything that is not a positive integer', async () => {
    const two = await service.request('GET', `/servers/${id}/logs?lines=2`);
    expect(two.body.data.logs).toHaveLength(2);
    for (const bad of ['0', '-3', 'abc', '1.5', '100000']) {
      const res = await service.request('GET', `/servers/${id}/logs?lines=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.code).toBe('INVALID_LINES');
    }
    expect((await service.request('GET', '/servers/00000000-0000-4000-8000-000000000000/logs')).status).toBe(404);
  });
});

describe('log streams over WebSocket', () => {
  it('replays the tail of one server, then streams new lines, one JSON frame each with exactly the fields of a log message', async () => {
    const ws = new WebSocket(wsUrl(`/ws/logs/${id}?tail=3`));
    const replay = collect(ws, (f) => f.length >= 3);
    const frames = await replay;
    expect(frames).toHaveLength(3);
    for (const frame of frames) {
      expect(Object.keys(frame).sort()).toEqual(['level', 'message', 'server_id', 'server_name', 'source', 'timestamp', 'type']);
      expect(frame).toMatchObject({ type: 'log', server_id: id, server_name: 'Logged' });
      expect(new Date(frame.timestamp).toISOString()).toBe(frame.timestamp);
    }
    const live = collect(ws, (f) => f.some((x) => x.message.includes('stopping')));
    await service.request('POST', `/servers/${id}/restart`);
    const after = await live;
    expect(after.find((x) => x.message.includes('stopping'))).toMatchObject({ source: 'controller', level: 'INFO' });
    ws.close();
  });

  it('streams every server on /ws/logs', async () => {
    const ws = new WebSocket(wsUrl('/ws/logs?tail=1'));
    const frames = collect(ws, (f) => f.some((x) => x.server_name === 'Second'));
    await opened(ws);
    const other = (await service.request('POST', '/servers', { name: 'Second' })).body;
    await frames.then((f) => expect(f[0].server_id).toBe(id)); // the replayed line
    const all = await frames;
    expect(all.find((x) => x.server_id === other.id)).toMatchObject({ server_name: 'Second', source: 'controller' });
    expect(all.find((x) => x.server_id === other.id).message).toMatch(/created/);
    ws.close();
    await service.request('DELETE', `/servers/${other.id}`);
  });

  it('refuses an unknown id before upgrading', async () => {
    const ws = new WebSocket(wsUrl('/ws/logs/00000000-0000-4000-8000-000000000000'));
    const status = await new Promise<number>((resolve) => ws.on('unexpected-response', (_req, res) => resolve(res.statusCode!)));
    expect(status).toBe(404);
  });
});

describe('the editor proxy', () => {
  it('serves the editor under /vscode/{port}/ and /editor/{port}/, and redirects the bare prefix', async () => {
    const page = await fetch(`${service.url}/vscode/${port}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');
    expect((await fetch(`${service.url}/editor/${port}/`)).status).toBe(200);
    const bare = await fetch(`${service.url}/vscode/${port}?folder=/x`, { redirect: 'manual' });
    expect([301, 302, 307, 308]).toContain(bare.status);
    expect(bare.headers.get('location')).toBe(`/vscode/${port}/?folder=/x`);
  });

  it('carries WebSocket traffic to the editor', async () => {
    const ws = new WebSocket(wsUrl(`/vscode/${port}/echo`));
    await opened(ws);
    const reply = new Promise<string>((r) => ws.once('message', (d) => r(String(d))));
    ws.send('ping through the proxy');
    expect(await reply).toBe('ping through the proxy');
    ws.close();
  });

  it('refuses ports it does not manage without contacting them, and its own port', async () => {
    let hits = 0;
    const stranger: Server = createServer((_req, res) => { hits++; res.end('secret'); });
    await new Promise<void>((r) => stranger.listen(0, '127.0.0.1', r));
    const strangerPort = (stranger.address() as AddressInfo).port;
    try {
      for (const p of [strangerPort, service.port]) {
        const res = await fetch(`${service.url}/vscode/${p}/`);
        expect(res.status).toBe(404);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('EDITOR_NOT_FOUND');
      }
      const ws = new WebSocket(wsUrl(`/vscode/${strangerPort}/`));
      const status = await new Promise<number>((resolve) => ws.on('unexpected-response', (_req, res) => resolve(res.statusCode!)));
      expect(status).toBe(404);
      expect(hits).toBe(0);
    } finally {
      stranger.close();
    }
  });

  it('refuses the port of a stopped server', async () => {
    const other = (await service.request('POST', '/servers', { name: 'Stopped one' })).body;
    expect((await fetch(`${service.url}/vscode/${other.port}/`)).status).toBe(404);
    await service.request('DELETE', `/servers/${other.id}`);
  });
});
