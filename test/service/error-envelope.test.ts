// Every refusal, HTTP or WebSocket, the proxy's included, is the API's error envelope:
// {"status":"error","error":{"code","message"}}, with a message that says what to do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw-http.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

const UPGRADE = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';
/** A port in the range that no server has: nothing the proxy may reach. */
const unmanaged = () => service.settings.config.ports.max;

function expectEnvelope(answer: { status?: number; text: string; body?: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.text).toMatch(/\r\ncontent-type: application\/json/i);
  expect(answer.body).toEqual({ status: 'error', error: { code, message: expect.any(String) } });
  expect(answer.body.error.message.length).toBeGreaterThan(20);
}

describe('the error envelope', () => {
  it('answers a proxy request to a port no managed editor runs on', async () => {
    const answer = await rawRequest(service.port, `GET /vscode/${unmanaged()}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expectEnvelope(answer, 404, 'EDITOR_NOT_FOUND');
  });

  it('answers a proxy WebSocket to a port no managed editor runs on, before any upgrade', async () => {
    const answer = await rawRequest(service.port, `GET /editor/${unmanaged()}/socket HTTP/1.1\r\nHost: 127.0.0.1\r\n${UPGRADE}\r\n`);
    expectEnvelope(answer, 404, 'EDITOR_NOT_FOUND');
  });

  it('answers a log stream of an unknown server, and a WebSocket at no such path', async () => {
    const logs = await rawRequest(service.port, `GET /ws/logs/00000000-0000-4000-8000-000000000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n${UPGRADE}\r\n`);
    expectEnvelope(logs, 404, 'SERVER_NOT_FOUND');
    const nowhere = await rawRequest(service.port, `GET /servers HTTP/1.1\r\nHost: 127.0.0.1\r\n${UPGRADE}\r\n`);
    expectEnvelope(nowhere, 404, 'NOT_FOUND');
  });

  it('answers CONNECT (this service is no forward proxy) instead of closing the socket without a word', async () => {
    const answer = await rawRequest(service.port, 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n');
    expectEnvelope(answer, 405, 'METHOD_NOT_ALLOWED');
    expect((await service.request('GET', '/health')).status).toBe(200);
  });
});
