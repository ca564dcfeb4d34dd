// A port a person's program listens on inside a server's editor, reached through the real service
// at code-server's own port-proxy paths under the editor's address (/vscode/{port}/proxy/{p}/ and
// /absproxy/), HTTP and WebSocket, with the editor's access rules; and refused when the program
// listening is another server's or no server's, when nothing listens, and for a stranger.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { freePort, opened } from '../helpers/net.ts';
import { parsePrometheusText, valueOf } from '../helpers/prometheus.ts';
import { startPortProgram, type PortProgram } from '../helpers/port-program.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com' };
type Who = Record<string, string>;

let service: TestService;
/** Alice's server and Bob's, both running, with their manifest names (their programs' DEVBOX_SERVER_NAME). */
let alpha: { id: string; port: number; manifest: string };
let beta: { id: string; port: number; manifest: string };
/** Programs of alpha, of beta and of no server. */
let alphas: PortProgram;
let betas: PortProgram;
let nobodys: PortProgram;

async function startServer(name: string, who: Who) {
  const created = await service.request('POST', '/servers', { name }, who);
  expect(created.status).toBe(201);
  const started = await service.request('POST', `/servers/${created.body.id}/start`, undefined, who);
  expect(started.status).toBe(200);
  const record = await service.request('GET', `/servers/${created.body.id}`, undefined, who);
  return { id: created.body.id as string, port: created.body.port as number, manifest: record.body.manifest as string };
}

beforeAll(async () => {
  service = await startTestService({ requireIdentity: true, config: { access: 'owner', admins: [] } });
  // Names no other test's servers have: a program is a server's by its DEVBOX_SERVER_NAME, on the machine every test shares.
  const tag = randomUUID().slice(0, 8);
  alpha = await startServer(`Alpha ${tag}`, ALICE);
  beta = await startServer(`Beta ${tag}`, BOB);
  alphas = await startPortProgram({ server: alpha.manifest });
  betas = await startPortProgram({ server: beta.manifest });
  nobodys = await startPortProgram({});
});

afterAll(async () => {
  await Promise.all([alphas, betas, nobodys].map((p) => p?.stop()));
  await service?.stop();
});

const get = async (path: string, who: Who = ALICE, init: RequestInit = {}) => {
  const answer = await fetch(service.url + path, { ...init, headers: { ...who, ...(init.headers as Record<string, string>) }, redirect: 'manual' });
  return { status: answer.status, headers: answer.headers, json: async (): Promise<any> => JSON.parse(await answer.text()) };
};

/** A WebSocket opened through the service as this person, or the status its handshake was refused with. */
function handshake(path: string, who: Who = ALICE): Promise<{ ws?: WebSocket; status?: number; body?: string }> {
  const ws = new WebSocket(service.url.replace('http', 'ws') + path, { headers: who });
  return new Promise((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    opened(ws).then(() => resolve({ ws }), (error) => (ws.readyState === WebSocket.CLOSED ? undefined : reject(error)));
  });
}

const reply = (ws: WebSocket, text: string): Promise<string> =>
  new Promise((resolve) => {
    ws.once('message', (data) => resolve(String(data)));
    ws.send(text);
  });

describe('a port of the server\'s own program', () => {
  it('answers at /vscode/{port}/proxy/{p}/ with the prefix up to the port stripped, and under /editor/ too', async () => {
    for (const prefix of ['vscode', 'editor']) {
      const answer = await get(`/${prefix}/${alpha.port}/proxy/${alphas.port}/some/page?x=1`);
      expect(answer.status).toBe(200);
      const seen = await answer.json();
      expect(seen).toMatchObject({ pid: alphas.pid, url: '/some/page?x=1', prefix: `/${prefix}/${alpha.port}/proxy/${alphas.port}` });
    }
  });

  it('passes a request body through, and redirects the bare port path to its slash', async () => {
    const posted = await get(`/vscode/${alpha.port}/proxy/${alphas.port}/form`, ALICE, { method: 'POST', body: 'a=1&b=2', headers: { 'Content-Type': 'text/plain' } });
    expect(await posted.json()).toMatchObject({ method: 'POST', url: '/form', body: 'a=1&b=2' });
    const bare = await get(`/vscode/${alpha.port}/proxy/${alphas.port}?q=1`);
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe(`/vscode/${alpha.port}/proxy/${alphas.port}/?q=1`);
  });

  it('keeps the program\'s redirects under the forwarded prefix', async () => {
    const moved = await get(`/vscode/${alpha.port}/proxy/${alphas.port}/go-home`);
    expect(moved.status).toBe(302);
    expect(moved.headers.get('location')).toBe(`/vscode/${alpha.port}/proxy/${alphas.port}/home`);
  });

  it('answers at /absproxy/{p}/ with the whole path, as the browser asked it', async () => {
    const answer = await get(`/vscode/${alpha.port}/absproxy/${alphas.port}/app/index.html?v=2`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ url: `/vscode/${alpha.port}/absproxy/${alphas.port}/app/index.html?v=2` });
  });

  it('relays a WebSocket both ways, through /proxy/ and /absproxy/', async () => {
    const viaProxy = await handshake(`/vscode/${alpha.port}/proxy/${alphas.port}/socket?t=1`);
    expect(await reply(viaProxy.ws!, 'hello')).toBe('echo /socket?t=1: hello');
    viaProxy.ws!.close();
    const viaAbs = await handshake(`/editor/${alpha.port}/absproxy/${alphas.port}/socket`);
    expect(await reply(viaAbs.ws!, 'again')).toBe(`echo /editor/${alpha.port}/absproxy/${alphas.port}/socket: again`);
    viaAbs.ws!.close();
  });

  it('counts as the server\'s use (its last activity, for idleness)', async () => {
    const lastActivity = async () => {
      const text = await (await fetch(`${service.url}/metrics`, { headers: ALICE })).text();
      return valueOf(parsePrometheusText(text), 'devbox_server_last_activity_timestamp_seconds', { name: alpha.manifest }) ?? 0;
    };
    const before = await lastActivity();
    // Asked in a later millisecond than the last use (a test before may have used it in this one).
    const asked = await eventually(() => Date.now() / 1000 > before && Date.now() / 1000, 1000, 1);
    expect((await get(`/vscode/${alpha.port}/proxy/${alphas.port}/used`)).status).toBe(200);
    const after = await lastActivity();
    expect(after).toBeGreaterThan(before);
    expect(after).toBeGreaterThanOrEqual(asked);
  });

  it('reaches a program listening on ::1 alone (a dev server told localhost), HTTP and WebSocket', async () => {
    const v6 = await startPortProgram({ server: alpha.manifest, host: '::1' });
    try {
      const answer = await get(`/vscode/${alpha.port}/proxy/${v6.port}/v6`);
      expect(await answer.json()).toMatchObject({ pid: v6.pid, url: '/v6' });
      const { ws } = await handshake(`/vscode/${alpha.port}/proxy/${v6.port}/socket`);
      expect(await reply(ws!, 'six')).toBe('echo /socket: six');
      ws!.close();
    } finally {
      await v6.stop();
    }
  });
});

describe('what is refused', () => {
  it('refuses a port another server\'s program listens on, saying it belongs to another program, and lets that server reach it', async () => {
    const refused = await get(`/vscode/${alpha.port}/proxy/${betas.port}/`);
    expect(refused.status).toBe(403);
    const body = await refused.json();
    expect(body.error.code).toBe('PORT_NOT_FORWARDED');
    expect(body.error.message).toContain(`port ${betas.port}`);
    expect(body.error.message).toContain('another program of this machine');
    const theirs = await get(`/vscode/${beta.port}/proxy/${betas.port}/`, BOB);
    expect(await theirs.json()).toMatchObject({ pid: betas.pid });
    expect((await handshake(`/vscode/${alpha.port}/proxy/${betas.port}/`)).status).toBe(403);
  });

  it('never sends a server\'s request over a connection kept open to another server\'s program', async () => {
    const before = await startPortProgram({ server: alpha.manifest });
    const port = before.port;
    let after: PortProgram | undefined;
    try {
      // Alpha's program answers over a kept-alive connection, then stops listening but keeps it.
      expect(await (await get(`/vscode/${alpha.port}/proxy/${port}/`)).json()).toMatchObject({ pid: before.pid });
      expect(await (await get(`/vscode/${alpha.port}/proxy/${port}/stop-listening`)).json()).toMatchObject({ listening: false });
      after = await startPortProgram({ server: beta.manifest, port });
      const reached = await eventually(async () => {
        const answer = await get(`/vscode/${beta.port}/proxy/${port}/`, BOB);
        return answer.status === 200 && answer.json();
      }, 5000);
      expect(reached).toMatchObject({ pid: after.pid });
    } finally {
      await Promise.all([before.stop(), after?.stop()]);
    }
  });

  it('refuses a port a program of no server listens on', async () => {
    const refused = await get(`/vscode/${alpha.port}/absproxy/${nobodys.port}/`);
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe('PORT_NOT_FORWARDED');
  });

  it('answers 502 naming the port when nothing listens on it, and forwards once the program starts', async () => {
    const port = await freePort();
    const nothing = await get(`/vscode/${alpha.port}/proxy/${port}/`);
    expect(nothing.status).toBe(502);
    const body = await nothing.json();
    expect(body.error.code).toBe('PORT_NOT_LISTENING');
    expect(body.error.message).toContain(`nothing listens on port ${port} in this editor`);
    const late = await startPortProgram({ server: alpha.manifest, port });
    try {
      // A port found free is looked at again within a quarter of a second.
      await eventually(async () => (await get(`/vscode/${alpha.port}/proxy/${port}/`)).status === 200, 5000);
    } finally {
      await late.stop();
    }
    await eventually(async () => (await get(`/vscode/${alpha.port}/proxy/${port}/`)).status === 502, 5000);
  });

  it('never forwards the editor\'s own port nor the service\'s', async () => {
    for (const port of [alpha.port, service.port]) {
      const refused = await get(`/vscode/${alpha.port}/proxy/${port}/`);
      expect(refused.status).toBe(403);
      expect((await refused.json()).error.code).toBe('PORT_NOT_FORWARDED');
    }
  });

  it('refuses a stranger exactly as the editor itself does, HTTP and WebSocket', async () => {
    const editor = await get(`/vscode/${alpha.port}/`, BOB);
    const forwarded = await get(`/vscode/${alpha.port}/proxy/${alphas.port}/`, BOB);
    expect(forwarded.status).toBe(editor.status);
    expect(forwarded.status).toBe(404);
    expect((await forwarded.json()).error).toEqual((await editor.json()).error);
    const socket = await handshake(`/vscode/${alpha.port}/proxy/${alphas.port}/socket`, BOB);
    expect(socket.status).toBe(404);
    // No identity at all: the platform's front door would have signed them in.
    expect((await fetch(`${service.url}/vscode/${alpha.port}/proxy/${alphas.port}/`)).status).toBe(401);
  });

  it('lets in someone the server is shared with, and closes their socket when the owner revokes it', async () => {
    expect((await service.request('POST', `/servers/${alpha.id}/access`, { person: 'bob@example.com' }, ALICE)).status).toBe(200);
    const answer = await get(`/vscode/${alpha.port}/proxy/${alphas.port}/shared`, BOB);
    expect(await answer.json()).toMatchObject({ pid: alphas.pid, url: '/shared' });
    const { ws } = await handshake(`/vscode/${alpha.port}/proxy/${alphas.port}/socket`, BOB);
    expect(await reply(ws!, 'hi')).toBe('echo /socket: hi');
    const closed = new Promise((resolve) => ws!.once('close', resolve));
    expect((await service.request('DELETE', `/servers/${alpha.id}/access/bob@example.com`, undefined, ALICE)).status).toBe(200);
    await closed;
    expect((await get(`/vscode/${alpha.port}/proxy/${alphas.port}/shared`, BOB)).status).toBe(404);
  });
});
