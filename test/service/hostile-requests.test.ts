// Requests no browser sends must never stop the service: each gets an error in the envelope, or
// a closed socket, and the editors keep running.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startBystander, startTestService, type TestService } from '../helpers/service.ts';
import { rawRequest } from '../helpers/raw-http.ts';

let service: TestService;
let editor: { id: string; port: number; pid: number };

beforeAll(async () => {
  service = await startTestService();
  editor = await startBystander(service);
});
afterAll(async () => {
  await service?.stop();
});

const UPGRADE = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';

async function expectStillServing() {
  expect((await service.request('GET', '/health')).status).toBe(200);
  const health = await service.request('GET', `/servers/${editor.id}/health`);
  expect(health.body.data).toMatchObject({ status: 'running', http_healthy: true, process_exists: true });
  expect((await service.request('GET', `/servers/${editor.id}`)).body.pid).toBe(editor.pid);
}

describe('hostile requests', () => {
  it('answers a WebSocket upgrade for "//" with an error instead of stopping', async () => {
    // As reported (Host "x" is no name of this service, so it is refused first), then with a Host that passes.
    const reported = await rawRequest(service.port, `GET // HTTP/1.1\r\nHost: x\r\n${UPGRADE}\r\n`);
    expect(reported.status).toBe(403);
    const answer = await rawRequest(service.port, `GET // HTTP/1.1\r\nHost: 127.0.0.1\r\n${UPGRADE}\r\n`);
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ status: 'error', error: { code: 'NOT_FOUND' } });
    await expectStillServing();
  });

  it('proxies an HTTP/1.0 request without a Host header to the editor', async () => {
    const answer = await rawRequest(service.port, `GET /vscode/${editor.port}/ HTTP/1.0\r\n\r\n`);
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('stub editor');
    await expectStillServing();
  });

  it('answers a request line it cannot parse with 400 in the error envelope', async () => {
    for (const request of ['GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 'HELLO\r\n\r\n', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n']) {
      const answer = await rawRequest(service.port, request);
      expect(answer.status, JSON.stringify(request)).toBe(400);
      expect(answer.body, JSON.stringify(request)).toMatchObject({ status: 'error', error: { code: 'BAD_REQUEST' } });
    }
    await expectStillServing();
  });

  it('answers in the error envelope what Node, ws and express would answer bare', async () => {
    const host = `Host: 127.0.0.1:${service.port}\r\n`;
    for (const [request, status, code] of [
      ['GET /servers HTTP/1.1\r\n\r\n', 400, 'BAD_REQUEST'], // no Host
      [`POST /servers HTTP/1.1\r\n${host}Expect: nonsense\r\nContent-Length: 2\r\n\r\n{}`, 417, 'EXPECTATION_FAILED'],
      [`POST /ws/logs HTTP/1.1\r\n${host}${UPGRADE}\r\n`, 405, 'BAD_HANDSHAKE'],
      [`GET /ws/logs HTTP/1.1\r\n${host}${UPGRADE.replace('dGhlIHNhbXBsZSBub25jZQ==', 'short')}\r\n`, 400, 'BAD_HANDSHAKE'],
      [`GET http://et[/servers HTTP/1.1\r\n${host}\r\n`, 400, 'BAD_REQUEST'],
    ] as const) {
      const answer = await rawRequest(service.port, request);
      expect(answer.status, request).toBe(status);
      expect(answer.body, request).toMatchObject({ status: 'error', error: { code } });
    }
    await expectStillServing();
  });

  it('logs a fault that slips through to the last-resort guard, answers 500 and keeps serving', async () => {
    const { index } = service;
    const endpointOf = index.endpointOf;
    index.endpointOf = () => {
      throw new Error('injected fault');
    };
    try {
      const page = await service.request('GET', `/vscode/${editor.port}/`);
      expect(page.status).toBe(500);
      expect(page.body).toMatchObject({ status: 'error', error: { code: 'INTERNAL' } });
      const ws = new WebSocket(`ws://127.0.0.1:${service.port}/vscode/${editor.port}/`);
      const status = await new Promise<number>((resolve) => ws.on('unexpected-response', (_req, res) => resolve(res.statusCode!)));
      expect(status).toBe(500);
    } finally {
      index.endpointOf = endpointOf;
    }
    expect(service.lines.filter((line) => line.includes('injected fault'))).toHaveLength(2);
    await expectStillServing();
  });
});
