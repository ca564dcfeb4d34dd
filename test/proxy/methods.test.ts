import { describe, expect, it } from 'vitest';
import { proxyToTarget, request, startService } from './fixtures.ts';

describe('proxying HTTP requests to an editor', () => {
  const ctx = proxyToTarget();

  it.each(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])(
    'forwards %s with its body, the prefix stripped and the query kept',
    async (method) => {
      const body = method === 'GET' ? undefined : `{"method":"${method}"}`;
      const answer = await request(`${ctx.service.base}/vscode/${ctx.target.port}/static/app.js?v=1&x=%2F`, {
        method,
        body,
        headers: body ? { 'Content-Type': 'application/json' } : {},
      });
      expect(answer.status).toBe(200);
      const seen = JSON.parse(answer.text);
      expect(seen.method).toBe(method);
      expect(seen.url).toBe('/static/app.js?v=1&x=%2F');
      expect(seen.bodyBytes).toBe(body ? Buffer.byteLength(body) : 0);
    },
  );

  it('forwards HEAD and answers with the editor status and headers', async () => {
    const answer = await request(`${ctx.service.base}/editor/${ctx.target.port}/healthz`, { method: 'HEAD' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(ctx.target.requests.map((seen) => `${seen.method} ${seen.url}`)).toEqual(['HEAD /healthz']);
  });

  it('serves /editor/{port}/ as an alias of /vscode/{port}/', async () => {
    const answer = await request(`${ctx.service.base}/editor/${ctx.target.port}/`);
    expect(JSON.parse(answer.text).url).toBe('/');
  });

  it('leaves every other path to the rest of the app', async () => {
    const answer = await request(`${ctx.service.base}/servers`);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual([]);
    expect(ctx.target.hits).toBe(0);
  });

  it('reuses a bounded pool of connections to the editor', async () => {
    const small = await startService((port) => port === ctx.target.port, { maxSocketsPerEditor: 4 });
    try {
      await Promise.all(Array.from({ length: 40 }, () => request(`${small.base}/vscode/${ctx.target.port}/x`)));
      const { sockets, freeSockets } = small.proxy.stats();
      expect(sockets + freeSockets).toBeLessThanOrEqual(4);
      expect(freeSockets).toBeGreaterThan(0);
    } finally {
      await small.close();
    }
  });
});
