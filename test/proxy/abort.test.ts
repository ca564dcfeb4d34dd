// A client that leaves mid-answer: the proxy gives up the editor's side too (the editor sees its
// request closed), and the pooled connection it used is not left busy.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/wait.ts';
import { startService, type Service } from './fixtures.ts';

describe('a client that leaves before the answer is complete', () => {
  let editor: http.Server | undefined;
  let service: Service | undefined;

  afterEach(async () => {
    await service?.close();
    editor?.closeAllConnections();
    await new Promise((resolve) => editor?.close(resolve));
  });

  it("closes the editor's request and frees the pool", async () => {
    let editorSawClose = false;
    // An editor that sends the start of an endless answer.
    editor = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('first chunk\n');
      res.on('close', () => {
        editorSawClose = !res.writableEnded;
      });
    });
    await new Promise<void>((resolve) => editor!.listen(0, '127.0.0.1', resolve));
    const { port } = editor.address() as AddressInfo;
    service = await startService((candidate) => candidate === port);

    const first = await new Promise<string>((resolve, reject) => {
      const req = http.get(`${service!.base}/vscode/${port}/stream`, { agent: false }, (res) => {
        res.once('data', (chunk: Buffer) => {
          req.destroy();
          resolve(String(chunk));
        });
      });
      req.on('error', () => {}); // the destroy
      req.on('response', () => {}).on('timeout', reject);
    });
    expect(first).toBe('first chunk\n');
    await eventually(() => expect(editorSawClose).toBe(true));
    await eventually(() => expect(service!.proxy.stats().sockets).toBe(0));
  });
});
