// Stopping the service: it never waits on the browsers still attached to it, and a shutdown that
// stops the editors records them stopped, so the next start brings back what the manifests ask.
import { promises as fs } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ManifestStore } from '../../src/manifests/store.ts';
import { startService } from '../../src/service.ts';
import { opened } from '../helpers/net.ts';
import { eventually, killEditors, makeSettings, processExists, request, runningEditors, startTestService } from '../helpers/service.ts';

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

  it('with stopEditors, records the editors Stopped (spec untouched), and the next start runs them again', async () => {
    const settings = await makeSettings();
    const root = join(settings.manifestsDir, '..');
    const services: Array<Awaited<ReturnType<typeof startService>>> = [];
    try {
      const first = await startService(settings, () => undefined);
      services.push(first);
      const { id } = (await request(first.url, 'POST', '/servers', { name: 'Comes back' })).body;
      const started = (await request(first.url, 'POST', `/servers/${id}/start`)).body.data;
      expect(started.status).toBe('running');
      await first.close({ stopEditors: true });

      expect(processExists(started.pid)).toBe(false);
      expect(runningEditors(settings.dataDir)).toEqual([]);
      const read = await new ManifestStore(settings.manifestsDir, join(settings.dataDir, 'status')).read('comes-back');
      if (read.kind !== 'ok') throw new Error(`manifest is ${read.kind}`);
      expect(read.server.spec.running).toBe(true);
      expect(read.server.status).toMatchObject({ phase: 'Stopped', reason: 'ServiceShutdown' });
      expect(read.server.status?.runtimeRef ?? null).toBeNull();
      expect(read.server.status).not.toHaveProperty('pid');

      const second = await startService(settings, () => undefined);
      services.push(second);
      const record = await eventually(async () => {
        const body = (await request(second.url, 'GET', `/servers/${id}`)).body;
        return body.status === 'running' ? body : undefined;
      }, 15_000);
      expect(record.pid).not.toBe(started.pid);
      expect(processExists(record.pid)).toBe(true);
    } finally {
      for (const service of services) await service.close({ stopEditors: true });
      await killEditors(settings.dataDir);
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});
