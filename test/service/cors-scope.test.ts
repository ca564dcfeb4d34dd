// CORS is for the API only: a proxied editor page must never tell a browser that any site may read it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let port: number;

beforeAll(async () => {
  service = await startTestService();
  const created = await service.request('POST', '/servers', { name: 'Private' });
  await service.request('POST', `/servers/${created.body.id}/start`);
  port = created.body.port;
});
afterAll(async () => {
  await service?.stop();
});

const corsHeaders = (headers: Headers) => [...headers.keys()].filter((name) => name.startsWith('access-control-'));

describe('CORS', () => {
  it('is on API responses', async () => {
    for (const path of ['/servers', '/health', '/servers/nope']) {
      const res = await service.request('GET', path);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
  });

  it('is on no editor page, no preflight to an editor and no error of the proxy', async () => {
    const page = await fetch(`${service.url}/vscode/${port}/`, { headers: { origin: `http://localhost:${service.port}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');
    expect(corsHeaders(page.headers)).toEqual([]);
    // A page of another site gets no editor page at all.
    const foreign = await fetch(`${service.url}/vscode/${port}/`, { headers: { origin: 'https://elsewhere.example' } });
    expect(foreign.status).toBe(403);
    expect(corsHeaders(foreign.headers)).toEqual([]);
    const preflight = await fetch(`${service.url}/editor/${port}/`, {
      method: 'OPTIONS',
      headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST' },
    });
    expect(corsHeaders(preflight.headers)).toEqual([]);
    for (const path of [`/vscode/${port}`, '/vscode/1/']) {
      const res = await fetch(`${service.url}${path}`, { redirect: 'manual' });
      expect(corsHeaders(res.headers), path).toEqual([]);
    }
  });
});
