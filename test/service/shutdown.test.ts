// Stopping the service never waits on the browsers still attached to it.
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { killEditors, startTestService } from '../helpers/service.ts';

describe('shutting the service down', () => {
  it('closes proxied and log WebSockets instead of waiting for their clients', async () => {
    const service = await startTestService();
    try {
      const { id, port } = (await service.request('POST', '/servers', { name: 'Attached' })).body;
      await service.request('POST', `/servers/${id}/start`);
      const base = service.url.replace('http', 'ws');
      const sockets = [new WebSocket(`${base}/vscode/${port}/echo`), new WebSocket(`${base}/ws/logs/${id}`)];
      await Promise.all(sockets.map(opened));
      const closed = Promise.all(sockets.map((ws) => new Promise((resolve) => ws.once('close', resolve))));

      const started = Date.now();
      await service.close({ stopEditors: true });
      // Stopping the editor takes up to its 2 s grace; waiting on the clients would never end.
      expect(Date.now() - started).toBeLessThan(15_000);
      await closed;
    } finally {
      await killEditors(service.settings.dataDir);
      await rm(service.root, { recursive: true, force: true });
    }
  });
});
