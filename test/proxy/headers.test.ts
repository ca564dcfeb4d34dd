import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { SERVICE_COOKIE_PREFIX } from '../../src/proxy/headers.ts';
import { opened } from '../helpers/net.ts';
import { request, proxyToTarget } from './fixtures.ts';

describe('headers passed to an editor', () => {
  const ctx = proxyToTarget();

  const credentials = {
    Authorization: 'Bearer service-token',
    'X-Forwarded-Access-Token': 'user-access-token',
    Cookie: `${SERVICE_COOKIE_PREFIX}-session=secret; code-server-session=keep; ${SERVICE_COOKIE_PREFIX}_csrf=x`,
  };

  it("drops Authorization, X-Forwarded-Access-Token and the service's own cookies, keeping the editor's", async () => {
    const answer = await request(`${ctx.service.base}/vscode/${ctx.target.port}/`, { headers: credentials });
    const { headers } = JSON.parse(answer.text);
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-forwarded-access-token']).toBeUndefined();
    expect(headers.cookie).toBe('code-server-session=keep');
    expect(JSON.stringify(headers)).not.toMatch(/service-token|user-access-token|secret/);
  });

  it("drops the platform's session cookies, Proxy-Authorization, and service cookies in any case or with a __Host- prefix", async () => {
    const headers = {
      'Proxy-Authorization': 'Basic cHJveHk6c2VjcmV0',
      Cookie: '__Host-databricksapps=platform-session; __Host-databricksapps_csrf=platform-csrf; vscode-tkn=keep; ' +
        `__Host-${SERVICE_COOKIE_PREFIX}-session=host-secret; ${SERVICE_COOKIE_PREFIX.toUpperCase()}_ID=upper-secret; __Secure-${SERVICE_COOKIE_PREFIX}=secure-secret`,
    };
    await request(`${ctx.service.base}/vscode/${ctx.target.port}/`, { headers });
    const socket = new WebSocket(`ws://127.0.0.1:${ctx.service.port}/vscode/${ctx.target.port}/`, { headers });
    try {
      await opened(socket);
    } finally {
      socket.terminate();
    }
    for (const seen of [ctx.target.requests[0].headers, ctx.target.upgrades[0]]) {
      expect(seen['proxy-authorization']).toBeUndefined();
      expect(seen.cookie).toBe('vscode-tkn=keep');
    }
  });

  it('drops the cookie header when only service cookies were sent', async () => {
    await request(`${ctx.service.base}/vscode/${ctx.target.port}/`, { headers: { Cookie: `${SERVICE_COOKIE_PREFIX}-session=secret` } });
    expect(ctx.target.requests[0].headers.cookie).toBeUndefined();
  });

  it('drops the same headers from WebSocket upgrades', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${ctx.service.port}/vscode/${ctx.target.port}/`, { headers: credentials });
    try {
      await opened(socket);
    } finally {
      socket.terminate();
    }
    const [headers] = ctx.target.upgrades;
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-forwarded-access-token']).toBeUndefined();
    expect(headers.cookie).toBe('code-server-session=keep');
  });

  it('tells the editor the original host, protocol and prefix', async () => {
    const answer = await request(`${ctx.service.base}/editor/${ctx.target.port}/`, { headers: { Host: 'devbox.example:8000' } });
    const { headers } = JSON.parse(answer.text);
    expect(headers.host).toBe('devbox.example:8000');
    expect(headers['x-forwarded-host']).toBe('devbox.example:8000');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-prefix']).toBe(`/editor/${ctx.target.port}`);
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
  });

  it("keeps a front proxy's forwarded protocol and host", async () => {
    const answer = await request(`${ctx.service.base}/vscode/${ctx.target.port}/`, {
      headers: { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'app.databricksapps.example' },
    });
    const { headers } = JSON.parse(answer.text);
    expect(headers['x-forwarded-proto']).toBe('https');
    expect(headers['x-forwarded-host']).toBe('app.databricksapps.example');
  });
});
