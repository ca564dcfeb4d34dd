// Ports and ids stay consistent: a replaced manifest moves the editor within one reconcile and
// keeps the server's id; conflicting ports and a full range are refused at create, at once.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { checkHealth } from '../../src/runtime/health.ts';
import { eventually, portRange, processExists, startTestService, type TestService } from '../helpers/service.ts';

const services: TestService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
});

async function start(config: Parameters<typeof startTestService>[0] = {}): Promise<TestService> {
  const service = await startTestService(config);
  services.push(service);
  return service;
}

describe('a running server\'s manifest replaced by one with a new spec.port and no status', () => {
  it('moves the editor to the new port; editor, record, API and proxy agree, and the id stays', async () => {
    const service = await start();
    const { id, port: oldPort } = (await service.request('POST', '/servers', { name: 'mover' })).body;
    const { pid: oldPid } = (await service.request('POST', `/servers/${id}/start`)).body.data;
    const newPort = service.settings.config.ports.max;
    const file = join(service.settings.manifestsDir, 'mover.yaml');
    const temp = join(service.settings.manifestsDir, '.mover.partial');
    await fs.writeFile(temp, stringify({
      apiVersion: 'devbox.dev/v1alpha1',
      kind: 'EditorServer',
      metadata: { name: 'mover' },
      spec: { displayName: 'mover', running: true, port: newPort },
    }));
    await fs.rename(temp, file);

    const record = await eventually(async () => {
      const r = (await service.request('GET', `/servers/${id}`)).body;
      // Settled: the controller has acted on the replaced spec (status outlives the file, so
      // until then the record may still show the old editor).
      return r.status === 'running' && r.port === newPort && r.observed_generation === r.generation ? r : undefined;
    });
    expect(record.id).toBe(id);
    expect(record.pid).not.toBe(oldPid);
    expect(processExists(oldPid)).toBe(false);
    expect((await checkHealth(newPort, 3000)).ok).toBe(true);
    expect((await checkHealth(oldPort, 500)).ok).toBe(false);
    const page = await fetch(`${service.url}/vscode/${newPort}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('stub editor');
    const text = await fs.readFile(file, 'utf8');
    expect(parse(await fs.readFile(`${service.settings.dataDir}/status/mover.yaml`, 'utf8')).uid).toBe(id);
    expect(text).toContain(`port: ${newPort}`);
    expect(text).not.toContain(`port: ${oldPort}`);
    expect((await service.request('GET', '/servers')).body.map((s: { id: string }) => s.id)).toEqual([id]);
  });
});

describe('ids across a restart', () => {
  it('stay with their servers, and a copy read before its original at start-up does not take the original\'s', async () => {
    const first = await startTestService();
    const { manifestsDir } = first.settings;
    const made = (await first.request('POST', '/servers', { name: 'zeta' })).body;
    // Written by hand, with no uid: the controller gives it one.
    await fs.writeFile(join(manifestsDir, 'hand.yaml'), stringify({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'hand' }, spec: { running: false } }));
    const listed = await eventually(async () => {
      const list = (await first.request('GET', '/servers')).body as { id: string; manifest: string; status: string }[];
      return list.length === 2 && list.every((s) => s.status === 'stopped') ? list : undefined;
    });
    const handId = listed.find((s) => s.manifest === 'hand')!.id;
    await first.close({ stopEditors: true });
    // cp zeta.yaml alpha.yaml while the service is down: alpha is read first at the next start.
    await fs.writeFile(join(manifestsDir, 'alpha.yaml'), (await fs.readFile(join(manifestsDir, 'zeta.yaml'), 'utf8')).replace('name: zeta', 'name: alpha'));

    const again = await start({ root: first.root });
    const ids = await eventually(async () => {
      const list = (await again.request('GET', '/servers')).body as { id: string; manifest: string; status: string }[];
      return list.length === 3 && list.every((s) => s.status === 'stopped') ? new Map(list.map((s) => [s.manifest, s.id])) : undefined;
    });
    expect(ids.get('zeta')).toBe(made.id);
    expect(ids.get('hand')).toBe(handId);
    expect(ids.get('alpha')).not.toBe(made.id);
    expect(new Set(ids.values()).size).toBe(3);
  });
});

describe('a new server', () => {
  it('never takes the name of one whose editor data (and uid) is still there', async () => {
    const service = await start();
    const remnant = join(service.settings.dataDir, 'editors', 'remnant');
    await fs.mkdir(remnant, { recursive: true });
    await fs.writeFile(join(remnant, 'uid'), '0b6f9a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b\n');
    const created = (await service.request('POST', '/servers', { name: 'remnant' })).body;
    expect(created.workspace_path).toBe(join(service.settings.dataDir, 'workspaces', 'remnant-2'));
    expect(await fs.readFile(join(remnant, 'uid'), 'utf8')).toBe('0b6f9a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b\n');
  });
});

describe('explicit ports at create', () => {
  it('give one of 20 parallel creates of the same port a 201, and the other 19 a 409', async () => {
    const service = await start();
    const port = service.settings.config.ports.min + 7;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      service.request('POST', '/servers', { name: `same port ${i}`, port })));
    const created = answers.filter((a) => a.status === 201);
    expect(created).toHaveLength(1);
    expect(created[0].body.port).toBe(port);
    const refused = answers.filter((a) => a.status === 409);
    expect(refused).toHaveLength(19);
    for (const r of refused) {
      expect(r.body.error.code).toBe('PORT_TAKEN');
      expect(r.body.error.message).toContain(`port ${port}`);
    }
    const files = (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml'));
    expect(files).toHaveLength(1);
  });

  it('refuse a create at once when the range is full, saying what to change', async () => {
    const { min } = portRange(2);
    const service = await start({ config: { ports: { min, max: min + 1 } } });
    for (const name of ['one', 'two']) expect((await service.request('POST', '/servers', { name })).status).toBe(201);
    const started = Date.now();
    const full = await service.request('POST', '/servers', { name: 'three' });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(full.status).toBe(409);
    expect(full.body.error.code).toBe('NO_FREE_PORT');
    expect(full.body.error.message).toContain(`${min}-${min + 1}`);
    expect(full.body.error.message).toMatch(/widen ports in the config/);
    expect((await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml')).sort()).toEqual(['one.yaml', 'two.yaml']);
  });
});
