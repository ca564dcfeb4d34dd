// The API's recorder as middleware in front of real express routes: each change answered becomes
// one entry once its answer is finished (done, refused with the envelope's code, failed), a route
// another part adds is recorded the same way, reads and unknown paths are not, and a git URL is
// named without its credentials.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { apiRecorder, type RouteAction } from '../../src/audit/api-recorder.ts';
import type { AuditInput } from '../../src/audit/entry.ts';
import type { ServerIndex } from '../../src/index/server-index.ts';
import { eventually } from '../helpers/wait.ts';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

let slow: Array<() => void> = [];
/** The slow route's connection was closed (by the client leaving). */
let closed = false;

async function serve(extraRoutes: RouteAction[] = []) {
  slow = [];
  closed = false;
  const entries: AuditInput[] = [];
  const index = { nameOfUid: (uid: string) => (uid === 'u-1' ? 'one' : undefined) } as unknown as ServerIndex;
  const app = express();
  app.use(apiRecorder({ index, actorOf: (h) => String(h['x-forwarded-email'] ?? 'local'), record: (e) => entries.push(e), extraRoutes }));
  app.use(express.json());
  app.post('/servers/:id/start', (_req, res) => void res.json({ status: 'success', data: { id: 'u-1' } }));
  app.post('/servers/:id/stop', (_req, res) => void res.status(409).json({ status: 'error', error: { code: 'MANIFEST_INVALID', message: 'fix it' } }));
  app.post('/servers/:id/restart', (_req, res) => void res.status(500).json({ status: 'error', error: { code: 'EDITOR_FAILED', message: 'no' } }));
  app.post('/servers/:id/clone-workspace', (_req, res) => void res.json({ status: 'success' }));
  app.post('/servers/:id/share', (_req, res) => void res.json({ status: 'success' }));
  app.get('/servers/:id', (_req, res) => void res.json({}));
  // A slow start: answered once `release` is called, whoever is still listening.
  app.post('/servers/:id/slow-start', async (_req, res) => {
    res.once('close', () => void (closed = true));
    await new Promise<void>((resolve) => slow.push(resolve));
    res.json({ status: 'success' });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) }).then((r) => r.text());
  return { entries, call, base };
}

describe('the API recorder', () => {
  it('records each change with its outcome and code once answered, and nothing for reads', async () => {
    const { entries, call } = await serve();
    await call('POST', '/servers/u-1/start', undefined, { 'X-Forwarded-Email': 'ada@example.com', 'X-Devbox-Client': 'dashboard' });
    await call('POST', '/servers/u-1/stop');
    await call('POST', '/servers/u-2/restart');
    await call('GET', '/servers/u-1');
    await call('POST', '/elsewhere');
    await eventually(() => entries.length === 3);
    expect(entries).toEqual([
      { actor: 'ada@example.com', door: 'dashboard', action: 'start', server_id: 'u-1', server_name: 'one', outcome: 'ok' },
      { actor: 'local', door: 'api', action: 'stop', server_id: 'u-1', server_name: 'one', outcome: 'refused', code: 'MANIFEST_INVALID' },
      { actor: 'local', door: 'api', action: 'restart', server_id: 'u-2', server_name: null, outcome: 'failed', code: 'EDITOR_FAILED' },
    ]);
  });

  it('names a git source without its credentials, query or fragment', async () => {
    const { entries, call } = await serve();
    await call('POST', '/servers/u-1/clone-workspace', { github_url: 'https://user:s3cret@example.com/org/repo.git?token=abc#frag' });
    await eventually(() => entries.length === 1);
    expect(entries[0].detail).toBe('workspace: git https://example.com/org/repo.git');
    expect(JSON.stringify(entries)).not.toMatch(/s3cret|abc|frag/);
  });

  it('records a route another part adds, as it does its own', async () => {
    const { entries, call } = await serve([{ method: 'POST', path: /^\/servers\/([^/]+)\/share\/?$/, action: 'share', detail: (req) => `with ${(req.body as { user: string }).user}` }]);
    await call('POST', '/servers/u-1/share', { user: 'bob@example.com' });
    await eventually(() => entries.length === 1);
    expect(entries[0]).toEqual({ actor: 'local', door: 'api', action: 'share', server_id: 'u-1', server_name: 'one', outcome: 'ok', detail: 'with bob@example.com' });
  });

  it('records a change whose client left before the answer, once the route answers', async () => {
    const { entries, base } = await serve([{ method: 'POST', path: /^\/servers\/([^/]+)\/slow-start\/?$/, action: 'start' }]);
    const abort = new AbortController();
    const call = fetch(`${base}/servers/u-1/slow-start`, { method: 'POST', signal: abort.signal }).catch(() => 'aborted');
    await eventually(() => slow.length === 1);
    abort.abort();
    expect(await call).toBe('aborted');
    // The route goes on, as the controller would, and answers into the closed connection.
    await eventually(() => closed);
    expect(entries).toEqual([]);
    slow[0]();
    await eventually(() => entries.length === 1);
    expect(entries[0]).toMatchObject({ action: 'start', server_id: 'u-1', outcome: 'ok', detail: 'the client left before the answer' });
  });
});
