// Deployed as a Databricks app, every request must come through the front proxy that signs users
// in: the API, GET /health, the log stream and the editor proxy, over HTTP and WebSocket alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { loadSettings } from '../../src/config/settings.ts';
import { opened } from '../helpers/net.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { eventually, request, startTestService, type TestService } from '../helpers/service.ts';

const SIGNED_IN = { 'X-Forwarded-Email': 'ada@example.com', 'X-Forwarded-User': '1234567890@example' };

let service: TestService;
/** A running editor (the stub), created and started by a signed-in user. */
let editor: { id: string; port: number };

const lines = (headers: Record<string, string>) => Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('') + 'Connection: close\r\n';

/** What the editor itself says when asked directly: 'expired' until a request reached it through the proxy. */
async function editorWasReached(): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${editor.port}/healthz`);
  return ((await res.json()) as { status: string }).status === 'alive';
}

/** The status of a WebSocket upgrade: 101 when it opened (then closed), else the refusal's. */
function upgradeStatus(path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${service.url.replace('http', 'ws')}${path}`, { headers });
    socket.once('unexpected-response', (req, res) => {
      req.destroy();
      resolve(res.statusCode ?? 0);
    });
    socket.once('upgrade', (res) => resolve(res.statusCode ?? 0));
    socket.once('open', () => socket.close());
    socket.once('error', (error) => reject(error));
  });
}

beforeAll(async () => {
  service = await startTestService({ requireIdentity: true });
  const created = await service.request('POST', '/servers', { name: 'Ada editor' }, SIGNED_IN);
  const started = await service.request('POST', `/servers/${created.body.id}/start`, undefined, SIGNED_IN);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  editor = { id: created.body.id, port: created.body.port };
});
afterAll(async () => {
  await service?.stop();
});

describe('deployed mode', () => {
  it('is on when Databricks Apps sets DATABRICKS_APP_PORT or DATABRICKS_APP_NAME, either alone', () => {
    expect(loadSettings({ DATABRICKS_APP_PORT: '8080' }).requireIdentity).toBe(true);
    expect(loadSettings({ DATABRICKS_APP_NAME: 'devbox' }).requireIdentity).toBe(true);
    expect(loadSettings({ DATABRICKS_APP_PORT: '8080', DEVBOX_REQUIRE_IDENTITY: '0' }).requireIdentity).toBe(false);
    expect(loadSettings({}).requireIdentity).toBe(false);
  });

  it('runs claude-code-router when deployed, or when DEVBOX_ROUTER=1 asks for it locally', () => {
    expect(loadSettings({ DATABRICKS_APP_NAME: 'devbox' }, { readConfig: false }).runRouter).toBe(true);
    expect(loadSettings({ DATABRICKS_APP_PORT: '8080', DEVBOX_ROUTER: '0' }, { readConfig: false }).runRouter).toBe(false);
    expect(loadSettings({}, { readConfig: false }).runRouter).toBe(false);
    expect(loadSettings({ DEVBOX_ROUTER: '1' }, { readConfig: false }).runRouter).toBe(true);
    expect(() => loadSettings({ DEVBOX_ROUTER: 'yes' }, { readConfig: false })).toThrow('DEVBOX_ROUTER="yes" must be 1 (on) or 0 (off)');
  });

  it('keeps loopback and no login locally: only DATABRICKS_APP_PORT opens the service to all addresses', () => {
    expect(loadSettings({}).host).toBe('127.0.0.1');
    expect(loadSettings({ DATABRICKS_APP_NAME: 'devbox' }).host).toBe('127.0.0.1');
    expect(loadSettings({ DATABRICKS_APP_PORT: '8080' }).host).toBe('0.0.0.0');
  });
});

describe('forwarded identity', () => {
  it('is required on REST routes: 401 in the error envelope without it, 200 with it', async () => {
    const anonymous = await request(service.url, 'GET', '/servers');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ status: 'error', error: { code: 'UNAUTHENTICATED' } });
    expect(anonymous.body.error.message).toContain('X-Forwarded-Email');
    expect((await request(service.url, 'POST', '/servers', { name: 'Intruder' })).status).toBe(401);
    expect((await request(service.url, 'GET', '/servers', undefined, { 'X-Forwarded-Email': 'ada@example.com' })).status).toBe(200);
    expect((await request(service.url, 'GET', '/servers', undefined, { 'X-Forwarded-User': '1234567890@example' })).status).toBe(200);
    const listed = await request(service.url, 'GET', '/servers', undefined, SIGNED_IN);
    expect(listed.body.map((s: { name: string }) => s.name)).toEqual(['Ada editor']);
  });

  it('is required on GET /health too', async () => {
    const anonymous = await request(service.url, 'GET', '/health');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHENTICATED');
    const signedIn = await request(service.url, 'GET', '/health', undefined, SIGNED_IN);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.servers).toBe(1);
  });

  it('is not given by X-Forwarded-Preferred-Username alone, nor by empty headers', async () => {
    const cases: Record<string, string>[] = [{ 'X-Forwarded-Preferred-Username': 'ada' }, { 'X-Forwarded-Email': '' }, { 'X-Forwarded-Email': '  ', 'X-Forwarded-User': '' }];
    for (const headers of cases) {
      expect((await request(service.url, 'GET', '/servers', undefined, headers)).status, JSON.stringify(headers)).toBe(401);
    }
  });

  it("keeps the platform's rule only: its host name passes, with an identity", async () => {
    const headers = { Host: 'devbox-1234.aws.databricksapps.com', 'X-Forwarded-Host': 'devbox-1234.aws.databricksapps.com' };
    const signedIn = await rawRequest(service.port, `GET /servers HTTP/1.1\r\n${lines({ ...headers, 'X-Forwarded-Email': 'ada@example.com' })}\r\n`);
    expect(signedIn.status).toBe(200);
    const anonymous = await rawRequest(service.port, `GET /servers HTTP/1.1\r\n${lines(headers)}\r\n`);
    expect(anonymous.status).toBe(401);
  });

  it('is required on editor pages through the proxy, which never reach the editor without it', async () => {
    for (const path of [`/vscode/${editor.port}/`, `/editor/${editor.port}/`, `/vscode/${editor.port}/?folder=/etc`]) {
      const anonymous = await request(service.url, 'GET', path, undefined, { 'X-Forwarded-Preferred-Username': 'ada' });
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.body.error.code).toBe('UNAUTHENTICATED');
    }
    expect((await request(service.url, 'POST', `/vscode/${editor.port}/`, 'x=1', { 'content-type': 'text/plain' })).status).toBe(401);
    expect(await editorWasReached()).toBe(false);

    const signedIn = await request(service.url, 'GET', `/vscode/${editor.port}/`, undefined, SIGNED_IN);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toContain('stub editor');
    expect(await editorWasReached()).toBe(true);
  });

  it('is required on WebSocket upgrades to the log stream: 401 without it, 101 with it', async () => {
    expect(await upgradeStatus('/ws/logs')).toBe(401);
    expect(await upgradeStatus(`/ws/logs/${editor.id}`, { 'X-Forwarded-Preferred-Username': 'ada' })).toBe(401);
    expect(await upgradeStatus('/ws/logs', SIGNED_IN)).toBe(101);
    expect(await upgradeStatus(`/ws/logs/${editor.id}`, { 'X-Forwarded-User': '1234567890@example' })).toBe(101);
  });

  it("is required on WebSocket upgrades to an editor: 401 without it, the editor's own socket with it", async () => {
    expect(await upgradeStatus(`/vscode/${editor.port}/stable-abc`)).toBe(401);
    expect(await upgradeStatus(`/editor/${editor.port}/stable-abc`, { 'X-Forwarded-Email': '' })).toBe(401);

    const socket = await opened(new WebSocket(`${service.url.replace('http', 'ws')}/vscode/${editor.port}/stable-abc`, { headers: SIGNED_IN }));
    try {
      const echoed = new Promise<string>((resolve) => socket.once('message', (data) => resolve(String(data))));
      socket.send('hello editor');
      expect(await echoed).toBe('hello editor');
    } finally {
      socket.close();
    }
    await eventually(() => socket.readyState === WebSocket.CLOSED);
  });
});
