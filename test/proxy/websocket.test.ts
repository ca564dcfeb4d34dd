import net, { type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { proxyToTarget, startService } from './fixtures.ts';

describe('proxying WebSocket upgrades', () => {
  const ctx = proxyToTarget();

  const open = (url: string): Promise<WebSocket> => {
    const socket = new WebSocket(url);
    ctx.sockets.push(socket);
    return opened(socket);
  };

  const reply = (socket: WebSocket, data: string | Buffer): Promise<{ data: Buffer; isBinary: boolean }> =>
    new Promise((resolve) => {
      socket.once('message', (received, isBinary) => resolve({ data: received as Buffer, isBinary }));
      socket.send(data);
    });

  it('echoes text and binary messages through the proxy, with the prefix stripped', async () => {
    const socket = await open(`ws://127.0.0.1:${ctx.service.port}/vscode/${ctx.target.port}/stable-abc?reconnectionToken=t1`);
    const text = await reply(socket, 'hello');
    expect(text.isBinary).toBe(false);
    expect(text.data.toString()).toBe('echo /stable-abc?reconnectionToken=t1: hello');

    const bytes = Buffer.from([0, 1, 2, 255]);
    const binary = await reply(socket, bytes);
    expect(binary.isBinary).toBe(true);
    expect(Buffer.compare(binary.data, bytes)).toBe(0);
  });

  /** The status of a refused upgrade; fails if the upgrade goes through. */
  const refusedStatus = (url: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const socket = new WebSocket(url);
      socket.once('unexpected-response', (req, res) => {
        req.destroy();
        resolve(res.statusCode ?? 0);
      });
      socket.once('error', () => {}); // the aborted handshake
      socket.once('open', () => {
        socket.terminate();
        reject(new Error('the upgrade went through'));
      });
    });

  it('refuses an upgrade to an unmanaged port with 404 and never contacts it', async () => {
    expect(await refusedStatus(`ws://127.0.0.1:${ctx.service.port}/vscode/${ctx.target.port + 1}/`)).toBe(404);
    const refusingService = await startService(() => false);
    try {
      expect(await refusedStatus(`ws://127.0.0.1:${refusingService.port}/editor/${ctx.target.port}/`)).toBe(404);
      expect(ctx.target.hits).toBe(0);
    } finally {
      await refusingService.close();
    }
  });
});

describe('an upgrade the editor refuses', () => {
  it('reaches the client as the editor answered it, its chunked body framed by the connection\'s end', async () => {
    // An editor that answers every upgrade with a chunked 403.
    const editor = net.createServer((socket) => {
      socket.once('data', () => {
        socket.end('HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nnope!\r\n8\r\n go away\r\n0\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => editor.listen(0, '127.0.0.1', resolve));
    const editorPort = (editor.address() as AddressInfo).port;
    const service = await startService((port) => port === editorPort);
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const client = net.connect(service.port, '127.0.0.1', () => {
          client.write(`GET /vscode/${editorPort}/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n`
            + 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
        });
        let text = '';
        client.setEncoding('latin1');
        client.on('data', (chunk: string) => (text += chunk));
        client.on('end', () => resolve(text));
        client.on('error', reject);
      });
      const [head, body] = answer.split('\r\n\r\n');
      expect(head.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden');
      expect(head.toLowerCase()).not.toContain('transfer-encoding');
      expect(head.toLowerCase()).toContain('connection: close');
      expect(head).toContain('Content-Type: text/plain');
      expect(body).toBe('nope! go away');
    } finally {
      await service.close();
      await new Promise((resolve) => editor.close(resolve));
    }
  });
});
