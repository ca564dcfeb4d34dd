// api.allowedOrigins: an operator locks the API to a list of origins (and the service's own
// pages), in the config file, re-read live. Allowed origins are named back with Vary: Origin;
// others are refused 403 before anything is written, preflights and WebSockets included.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { parseConfig } from '../../src/config/settings.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const PORTAL = 'https://portal.example';
const FOREIGN = 'https://elsewhere.example';

let service: TestService;
let dir: string;
let configFile: string;

const config = (origins: string[]) => `ports: { min: 20300, max: 20399 }\napi:\n  allowedOrigins: ${JSON.stringify(origins)}\n`;

beforeAll(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-cors-lock-'));
  configFile = join(dir, 'devbox.config.yaml');
  await fs.writeFile(configFile, config([PORTAL]));
  service = await startTestService({ configFile });
});
afterAll(async () => {
  await service?.stop();
  await fs.rm(dir, { recursive: true, force: true });
});

const call = (method: string, path: string, origin?: string, extra: Record<string, string> = {}, body?: unknown) =>
  fetch(`${service.url}${path}`, {
    method,
    headers: { ...(origin ? { Origin: origin } : {}), ...(body ? { 'Content-Type': 'application/json' } : {}), ...extra },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

function handshake(path: string, origin: string): Promise<{ status: number; allowOrigin: unknown }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${service.url.replace('http', 'ws')}${path}`, { headers: { Origin: origin } });
    ws.once('upgrade', (res) => {
      resolve({ status: 101, allowOrigin: res.headers['access-control-allow-origin'] });
      ws.terminate();
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode!, allowOrigin: res.headers['access-control-allow-origin'] });
      res.resume();
    });
    ws.once('error', reject);
  });
}

describe('api.allowedOrigins set to a list', () => {
  it('serves an allowed origin and names it back, with Vary: Origin', async () => {
    const answer = await call('GET', '/servers', PORTAL);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe(PORTAL);
    expect(answer.headers.get('vary')).toMatch(/Origin/);
    const created = await call('POST', '/servers', PORTAL, {}, { name: 'From the portal' });
    expect(created.status).toBe(201);
    expect(created.headers.get('access-control-allow-origin')).toBe(PORTAL);
  });

  it('refuses another origin with 403 and writes nothing', async () => {
    const before = (await fs.readdir(service.settings.manifestsDir)).sort();
    const refused = await call('POST', '/servers', FOREIGN, {}, { name: 'Planted' });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const body = (await refused.json()) as { error: { message: string } };
    expect(body).toMatchObject({ status: 'error', error: { code: 'ORIGIN_NOT_ALLOWED' } });
    expect(body.error.message).toContain('api.allowedOrigins');
    expect((await fs.readdir(service.settings.manifestsDir)).sort()).toEqual(before);
    expect((await call('GET', '/servers', FOREIGN)).status).toBe(403);
    expect((await call('GET', '/health', FOREIGN)).status).toBe(403);
  });

  it('answers preflights of the allowed origin and refuses those of another', async () => {
    const ask = { 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' };
    const allowed = await call('OPTIONS', '/servers', PORTAL, ask);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(PORTAL);
    expect(allowed.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, DELETE, OPTIONS');
    const refused = await call('OPTIONS', '/servers', FOREIGN, ask);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('opens the log stream for the allowed origin only', async () => {
    expect(await handshake('/ws/logs', PORTAL)).toEqual({ status: 101, allowOrigin: PORTAL });
    expect((await handshake('/ws/logs', FOREIGN)).status).toBe(403);
  });

  it("serves the service's own pages and scripts that send no Origin", async () => {
    const own = await call('POST', '/servers', service.url, {}, { name: 'From the dashboard' });
    expect(own.status).toBe(201);
    expect(own.headers.get('access-control-allow-origin')).toBe(service.url);
    expect((await call('GET', '/servers')).status).toBe(200);
  });

  it('is re-read live: ["*"] opens the API to every origin at once, a list locks it again', async () => {
    await fs.writeFile(configFile, config(['*']));
    const open = await eventually(async () => {
      const answer = await call('GET', '/servers', FOREIGN);
      return answer.status === 200 ? answer : undefined;
    });
    expect(open.headers.get('access-control-allow-origin')).toBe('*');
    await fs.writeFile(configFile, config([PORTAL]));
    await eventually(async () => (await call('GET', '/servers', FOREIGN)).status === 403);
  });
});

describe('api.allowedOrigins in the config file', () => {
  it('refuses an entry that is not an origin, saying how to write one', () => {
    const read = parseConfig('devbox.config.yaml', 'api:\n  allowedOrigins: ["https://portal.example/app", "portal.example"]\n');
    expect(read.problems?.map((p) => p.problem)).toEqual([
      expect.stringContaining('"https://portal.example/app" is not an origin'),
      expect.stringContaining('"portal.example" is not an origin'),
    ]);
    const good = parseConfig('devbox.config.yaml', 'api:\n  allowedOrigins: ["https://portal.example", "http://localhost:5173"]\n');
    expect(good.problems).toBeUndefined();
  });
});
