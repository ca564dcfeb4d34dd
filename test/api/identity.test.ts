// Deployed as a Databricks app, requests must come through the front proxy that signs users in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { loadSettings } from '../../src/config/settings.ts';
import { request, startTestService, type TestService } from '../helpers/service.ts';
import { rawRequest } from '../helpers/raw-http.ts';

let service: TestService;

const lines = (headers: Record<string, string>) => Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('') + 'Connection: close\r\n';

beforeAll(async () => {
  service = await startTestService({ requireIdentity: true });
});
afterAll(async () => {
  await service?.stop();
});

describe('forwarded identity', () => {
  it('is required by default when running as a Databricks app', () => {
    expect(loadSettings({ DATABRICKS_APP_PORT: '8080' }).requireIdentity).toBe(true);
    expect(loadSettings({ DATABRICKS_APP_PORT: '8080', DEVBOX_REQUIRE_IDENTITY: '0' }).requireIdentity).toBe(false);
    expect(loadSettings({}).requireIdentity).toBe(false);
  });

  it('refuses requests without the front proxy identity headers, API and proxy alike', async () => {
    const anonymous = await request(service.url, 'GET', '/servers');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHENTICATED');
    expect((await request(service.url, 'GET', '/vscode/8012/')).status).toBe(401);
    const signedIn = await request(service.url, 'GET', '/servers', undefined, { 'x-forwarded-email': 'ada@example.com' });
    expect(signedIn.status).toBe(200);
  });

  it("keeps the platform's rule only: its host name passes, with an identity", async () => {
    const headers = { Host: 'devbox-1234.aws.databricksapps.com', 'X-Forwarded-Host': 'devbox-1234.aws.databricksapps.com' };
    const signedIn = await rawRequest(service.port, `GET /servers HTTP/1.1\r\n${lines({ ...headers, 'X-Forwarded-Email': 'ada@example.com' })}\r\n`);
    expect(signedIn.status).toBe(200);
    const anonymous = await rawRequest(service.port, `GET /servers HTTP/1.1\r\n${lines(headers)}\r\n`);
    expect(anonymous.status).toBe(401);
  });

  it('refuses WebSocket upgrades without them', async () => {
    const ws = new WebSocket(`${service.url.replace('http', 'ws')}/ws/logs`);
    const status = await new Promise<number>((resolve) => ws.on('unexpected-response', (_req, res) => resolve(res.statusCode!)));
    expect(status).toBe(401);
  });
});
