import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/net.ts';
import { request, startService, type Service } from './fixtures.ts';

describe('an editor that does not answer', () => {
  let service: Service;
  let hung: net.Server | undefined;

  afterEach(async () => {
    await service.close();
    if (hung) await new Promise((resolve) => hung?.close(resolve));
  });

  it('gets 502 with a clear message when the editor refuses the connection', async () => {
    const port = await freePort();
    service = await startService((candidate) => candidate === port);
    const answer = await request(`${service.base}/vscode/${port}/`);
    expect(answer.status).toBe(502);
    const { error } = JSON.parse(answer.text);
    expect(error.code).toBe('EDITOR_UNAVAILABLE');
    expect(error.message).toContain(`port ${port}`);
    expect(error.message).toContain('ECONNREFUSED');
    expect(service.logged).toEqual([`proxy: ECONNREFUSED on GET /vscode/${port}/ -> 127.0.0.1:${port}`]);
  });

  it('gets 502 for a request with a body too, small or larger than socket buffers', async () => {
    const port = await freePort();
    service = await startService((candidate) => candidate === port);
    for (const body of ['{"a":1}', 'x'.repeat(200_000)]) {
      const answer = await request(`${service.base}/vscode/${port}/upload`, { method: 'POST', body });
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.message).toContain('ECONNREFUSED');
    }
  });

  it('gets 502 when the editor accepts but stays silent past the timeout', async () => {
    const sockets: net.Socket[] = [];
    hung = net.createServer((socket) => sockets.push(socket));
    hung.on('close', () => sockets.forEach((socket) => socket.destroy()));
    await new Promise<void>((resolve) => hung?.listen(0, '127.0.0.1', resolve));
    const { port } = hung.address() as net.AddressInfo;
    service = await startService((candidate) => candidate === port, { timeoutMs: 200 });
    const answer = await request(`${service.base}/vscode/${port}/`);
    expect(answer.status).toBe(502);
    const { error } = JSON.parse(answer.text);
    expect(error.code).toBe('EDITOR_UNAVAILABLE');
    expect(error.message).toContain('ETIMEDOUT');
    expect(service.logged).toEqual([`proxy: ETIMEDOUT on GET /vscode/${port}/ -> 127.0.0.1:${port}`]);
    for (const socket of sockets) socket.destroy();
  });

  it('refuses a WebSocket upgrade with 502 when the editor is down', async () => {
    const port = await freePort();
    service = await startService((candidate) => candidate === port);
    const answer = await new Promise<string>((resolve) => {
      const socket = net.connect(service.port, '127.0.0.1', () => {
        socket.write(
          `GET /vscode/${port}/ HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
            'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        );
      });
      let text = '';
      socket.setEncoding('utf8').on('data', (chunk) => (text += chunk));
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 502 Bad Gateway\r\n/);
    expect(answer).toContain('EDITOR_UNAVAILABLE');
  });
});

describe('an editor answering what Node cannot pass on', () => {
  it('gets the client a 502 saying so, at once, and the proxy goes on', async () => {
    // A status text with a byte above 0x7e: undici's parser lets it through, Node's writeHead refuses it.
    const editor = net.createServer((socket) => {
      socket.once('data', () => socket.end(Buffer.from('HTTP/1.1 200 O\xffK\r\nContent-Length: 2\r\n\r\nok', 'latin1')));
    });
    await new Promise<void>((resolve) => editor.listen(0, '127.0.0.1', resolve));
    const editorPort = (editor.address() as AddressInfo).port;
    const service = await startService((port) => port === editorPort);
    try {
      const res = await request(`http://127.0.0.1:${service.port}/vscode/${editorPort}/`);
      expect(res.status).toBe(502);
      expect(JSON.parse(res.text).error.message).toContain('cannot be passed on');
      expect((await request(`http://127.0.0.1:${service.port}/vscode/${editorPort + 1}/`)).status).toBe(404);
    } finally {
      await service.close();
      await new Promise((resolve) => editor.close(resolve));
    }
  });
});
