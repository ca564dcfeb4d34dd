// Only the user's own browser reaches the editors. A DNS-rebinding page (its own name, now
// resolving to 127.0.0.1) gets 403 before anything is proxied or upgraded, API included; no
// foreign page reaches an editor or opens its WebSocket, whatever Host it reaches the service by.
// The API itself follows its cross-origin policy (every origin by default; test/api/cors-lock).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { startTestService, type TestService } from '../helpers/service.ts';
import { rawRequest } from '../helpers/raw-http.ts';

let service: TestService;
let editor: { id: string; port: number };

beforeAll(async () => {
  service = await startTestService({ allowedHosts: ['devbox.example', '.corp.example'] });
  const created = await service.request('POST', '/servers', { name: 'Target' });
  await service.request('POST', `/servers/${created.body.id}/start`);
  editor = { id: created.body.id, port: created.body.port };
});
afterAll(async () => {
  await service?.stop();
});

const get = (path: string, headers: string) =>
  rawRequest(service.port, `GET ${path} HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`);

/** The status a WebSocket handshake ends with: 101 when it opened. */
function handshake(path: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(`ws://127.0.0.1:${service.port}${path}`, { headers });
  return new Promise<number>((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!));
    ws.once('open', () => {
      ws.terminate();
      resolve(101);
    });
    ws.once('error', reject);
  });
}

/** The stub editor says "expired" at /healthz until it has answered any other request. */
async function editorWasReached(): Promise<boolean> {
  const answer = await fetch(`http://127.0.0.1:${editor.port}/healthz`);
  return ((await answer.json()) as { status: string }).status === 'alive';
}

describe('a DNS-rebinding page', () => {
  const attacker = () => ({ Host: `attacker.example:${service.port}`, Origin: `http://attacker.example:${service.port}` });

  it('gets 403 from the API and from editor pages, and the editor sees no request', async () => {
    const headers = Object.entries(attacker()).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    for (const path of ['/servers', '/health', `/servers/${editor.id}`, `/vscode/${editor.port}/`, `/editor/${editor.port}/static/x.js`, '/no-such-route']) {
      const answer = await get(path, headers);
      expect(answer.status, path).toBe(403);
      expect(answer.body, path).toMatchObject({ status: 'error', error: { code: 'HOST_NOT_ALLOWED' } });
      expect(answer.body.error.message).toContain('DEVBOX_ALLOWED_HOSTS');
    }
    expect(await editorWasReached()).toBe(false);
  });

  it('gets no WebSocket to an editor or to the log streams', async () => {
    for (const path of [`/vscode/${editor.port}/`, '/ws/logs', `/ws/logs/${editor.id}`]) {
      expect(await handshake(path, attacker()), path).toBe(403);
    }
  });
});

describe('a page of another site, reaching the service by its right name', () => {
  it('gets no WebSocket to an editor', async () => {
    for (const origin of ['http://attacker.example', 'null']) {
      expect(await handshake(`/vscode/${editor.port}/`, { Host: `127.0.0.1:${service.port}`, Origin: origin }), origin).toBe(403);
    }
  });

  it('opens the log streams, as the API allows every origin by default (api.allowedOrigins locks them)', async () => {
    for (const path of ['/ws/logs', `/ws/logs/${editor.id}`]) {
      expect(await handshake(path, { Host: `127.0.0.1:${service.port}`, Origin: 'http://tools.example' }), path).toBe(101);
    }
  });
});

describe('a page of another site, calling the service by its right name', () => {
  const call = (method: string, path: string, origin: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${service.port}${path}`, {
      method,
      headers: { Origin: origin, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('calls the API as the interface allows (every origin, by default), with the CORS headers', async () => {
    const listed = await call('GET', `/servers/${editor.id}/logs`, 'https://tools.example');
    expect(listed.status).toBe(200);
    expect(listed.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('sends no form to an editor and gets no editor page', async () => {
    const answer = await call('POST', `/vscode/${editor.port}/upload`, 'null', { x: 1 });
    expect(answer.status).toBe(403);
    expect(await answer.json()).toMatchObject({ error: { code: 'ORIGIN_NOT_ALLOWED' } });
    const page = await call('GET', `/vscode/${editor.port}/`, 'https://attacker.example');
    expect(page.status).toBe(403);
    expect(page.headers.get('access-control-allow-origin')).toBeNull();
    expect(await editorWasReached()).toBe(false);
  });

  it('gets its preflight answered, as the interface asks, and scripts without Origin are served', async () => {
    const preflight = await fetch(`http://127.0.0.1:${service.port}/servers`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://attacker.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect((await service.request('GET', `/servers/${editor.id}/logs`)).status).toBe(200);
  });

  it('of this machine (another port, such as a dashboard in development) is served', async () => {
    const answer = await call('GET', '/servers', 'http://localhost:5173');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('the names of this service', () => {
  it('answer: loopback names, the bound address and DEVBOX_ALLOWED_HOSTS', async () => {
    const port = service.port;
    for (const host of [`localhost:${port}`, 'LOCALHOST', `app.localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`,
      'devbox.example', 'devbox.example.', 'corp.example', `team.corp.example:${port}`]) {
      const answer = await get('/health', `Host: ${host}\r\n`);
      expect(answer.status, host).toBe(200);
    }
    const page = await get(`/vscode/${editor.port}/`, `Host: localhost:${port}\r\n`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('stub editor');
    for (const [host, origin] of [[`localhost:${port}`, `http://localhost:${port}`], ['devbox.example', 'https://devbox.example']]) {
      const ws = await opened(new WebSocket(`ws://127.0.0.1:${port}/vscode/${editor.port}/`, { headers: { Host: host, Origin: origin } }));
      const echo = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
      ws.send('through the proxy');
      expect(await echo).toBe('through the proxy');
      ws.terminate();
    }
  });

  it('are the only ones: a name that merely contains one is refused', async () => {
    for (const host of ['localhost.attacker.example', 'devbox.example.attacker.example', 'notcorp.example', '127.0.0.1.nip.io', 'x:y:z']) {
      expect((await get('/health', `Host: ${host}\r\n`)).status, host).toBe(403);
    }
  });
});
