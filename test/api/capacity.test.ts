// Capacity limits through the running service: starts beyond capacity.maxRunning or
// capacity.maxMemoryMb are refused (409 by the API, CapacityExceeded for a manifest), wait for
// room, and with whenFull stopIdlest make room by stopping the least recently active idle editor.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually, portRange, processExists, runningEditors, startTestService, type TestService } from '../helpers/service.ts';

const services: TestService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
});

type Capacity = { maxRunning: number; maxMemoryMb: number | 'auto'; whenFull: 'refuse' | 'stopIdlest'; idleAfterSeconds: number };

/** A service reading a config file (so a test can edit its limits live) with these capacity limits. */
async function serviceWith(capacity: Partial<Capacity>) {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-capacity-'));
  const configFile = join(root, 'devbox.config.yaml');
  const config = (c: Partial<Capacity>) => stringify({
    ports: portRange(),
    editor: { stopGraceSeconds: 2, startTimeoutSeconds: 15 },
    controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5 },
    capacity: { maxRunning: 0, maxMemoryMb: 0, whenFull: 'refuse', idleAfterSeconds: 60, ...c },
  });
  await fs.writeFile(configFile, config(capacity));
  const service = await startTestService({ root, configFile });
  services.push(service);
  const create = async (name: string) => {
    const created = await service.request('POST', '/servers', { name });
    expect(created.status).toBe(201);
    return created.body.id as string;
  };
  const start = (id: string) => service.request('POST', `/servers/${id}/start`);
  const record = async (id: string) => (await service.request('GET', `/servers/${id}`)).body;
  const live = () => runningEditors(service.settings.dataDir).filter((e) => processExists(e.identity.pid));
  const health = async () => (await service.request('GET', '/health')).body;
  /** Saves new limits the way an editor does, and waits until the service uses them. */
  const setCapacity = async (next: Partial<Capacity>) => {
    await fs.writeFile(`${configFile}.tmp`, config({ ...capacity, ...next }));
    await fs.rename(`${configFile}.tmp`, configFile);
    await eventually(async () => {
      const c = (await health()).capacity;
      return Object.entries(next).every(([k, v]) => ({ maxRunning: c.max_running ?? 0, whenFull: c.when_full, idleAfterSeconds: c.idle_after_seconds, maxMemoryMb: c.memory_limit_mb ?? 0 } as Record<string, unknown>)[k] === v);
    });
  };
  return { service, create, start, record, live, health, setCapacity };
}

const manifest = (name: string) => [
  'apiVersion: devbox.dev/v1alpha1',
  'kind: EditorServer',
  'metadata:',
  `  name: ${name}`,
  'spec:',
  `  displayName: ${name}`,
  '  running: true',
  '',
].join('\n');

describe('capacity.maxRunning', () => {
  it('refuses a third start with 409 naming the limit, runs no third editor and leaves the manifest as it was', async () => {
    const { service, create, start, live, record } = await serviceWith({ maxRunning: 2 });
    const [a, b, c] = [await create('a'), await create('b'), await create('c')];
    expect((await start(a)).status).toBe(200);
    expect((await start(b)).status).toBe(200);
    const file = join(service.settings.manifestsDir, 'c.yaml');
    const before = await fs.readFile(file, 'utf8');

    const refused = await start(c);
    expect(refused.status).toBe(409);
    expect(refused.body.status).toBe('error');
    expect(refused.body.error.code).toBe('CAPACITY_EXCEEDED');
    expect(refused.body.error.message).toBe('server "c" was not started: 2 of 2 editors are running (capacity.maxRunning): stop one, or raise capacity.maxRunning in the config');
    expect(refused.body.error.details).toEqual({ limit: 'capacity.maxRunning' });
    expect(await fs.readFile(file, 'utf8')).toBe(before);
    expect(live().map((e) => e.name).sort()).toEqual(['a', 'b']);
    expect((await record(c)).status).toBe('stopped');

    // A stop frees a slot for the next start.
    expect((await service.request('POST', `/servers/${a}/stop`)).status).toBe(200);
    expect((await start(c)).status).toBe(200);
    expect(live().map((e) => e.name).sort()).toEqual(['b', 'c']);
  });

  it('gives the last slot to exactly one of two concurrent starts', async () => {
    const { create, start, live } = await serviceWith({ maxRunning: 2 });
    const [a, b, c] = [await create('a'), await create('b'), await create('c')];
    expect((await start(a)).status).toBe(200);
    const answers = await Promise.all([start(b), start(c)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(answers.find((r) => r.status === 409)!.body.error.code).toBe('CAPACITY_EXCEEDED');
    expect(live()).toHaveLength(2);
  });

  it('does not start a hand-written manifest beyond the limit, says why, and starts it once another stops', async () => {
    const { service, create, start, live, record } = await serviceWith({ maxRunning: 1 });
    const a = await create('a');
    expect((await start(a)).status).toBe(200);
    await fs.writeFile(join(service.settings.manifestsDir, 'handmade.yaml'), manifest('handmade'));
    const waiting = await eventually(async () => {
      const found = (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === 'handmade');
      return found?.reason === 'CapacityExceeded' ? found : undefined;
    });
    expect(waiting.phase).toBe('Pending');
    expect(waiting.pid).toBeNull();
    expect(waiting.message).toBe('1 of 1 editors are running (capacity.maxRunning): stop one, or raise capacity.maxRunning in the config; it starts by itself when room frees');
    expect((await service.request('GET', '/health')).body.capacity.waiting).toEqual(['handmade']);
    expect(live().map((e) => e.name)).toEqual(['a']);

    expect((await service.request('POST', `/servers/${a}/stop`)).status).toBe(200);
    const started = await eventually(async () => {
      const r = await record(waiting.id);
      return r.status === 'running' ? r : undefined;
    });
    expect(processExists(started.pid)).toBe(true);
    expect(live().map((e) => e.name)).toEqual(['handmade']);
  });

  it('starts the waiting server when the limit is raised in the config file', async () => {
    const { service, create, start, live, record, setCapacity } = await serviceWith({ maxRunning: 1 });
    expect((await start(await create('a'))).status).toBe(200);
    await fs.writeFile(join(service.settings.manifestsDir, 'later.yaml'), manifest('later'));
    const waiting = await eventually(async () => {
      const found = (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === 'later');
      return found?.reason === 'CapacityExceeded' ? found : undefined;
    });

    await setCapacity({ maxRunning: 2 });
    const started = await eventually(async () => {
      const r = await record(waiting.id);
      return r.status === 'running' ? r : undefined;
    });
    expect(processExists(started.pid)).toBe(true);
    expect(live()).toHaveLength(2);
  });
});

describe('capacity.maxMemoryMb', () => {
  it('refuses a start the running editors\' real memory leaves no room for, naming the figures', async () => {
    // A stub editor's resident memory is far below 200 MB, so a new editor is counted at 200 MB:
    // with 240 MB, one editor fits and a second does not.
    const { create, start, live, health, record } = await serviceWith({ maxMemoryMb: 240 });
    const [a, b] = [await create('a'), await create('b')];
    expect((await start(a)).status).toBe(200);
    // The sampler has measured the running editor: the figure is its real resident memory.
    const sampled = await eventually(async () => {
      const mb = (await record(a)).memory_mb;
      return typeof mb === 'number' && mb > 0 ? mb : undefined;
    });
    expect(sampled).toBeLessThan(200);

    const refused = await start(b);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('CAPACITY_EXCEEDED');
    expect(refused.body.error.details).toEqual({ limit: 'capacity.maxMemoryMb' });
    expect(refused.body.error.message).toMatch(/^server "b" was not started: the running editors use \d+ MB of 240 MB \(capacity\.maxMemoryMb\) and one more needs about 200 MB: stop one, or raise capacity\.maxMemoryMb in the config$/);
    const used = Number(/use (\d+) MB/.exec(refused.body.error.message)![1]);
    expect(Math.abs(used - sampled)).toBeLessThanOrEqual(5);
    expect(live().map((e) => e.name)).toEqual(['a']);

    const figures = (await health()).capacity;
    expect(figures).toMatchObject({ running: 1, max_running: null, memory_limit_mb: 240, when_full: 'refuse', editor_estimate_mb: 200 });
    expect(figures.memory_free_mb).toBe(240 - figures.memory_used_mb);
  });
});

describe('whenFull stopIdlest', () => {
  it('stops the least recently active idle editor to start the new one, and says so in its status', async () => {
    const { service, create, start, live, record, setCapacity } = await serviceWith({ maxRunning: 2, whenFull: 'stopIdlest', idleAfterSeconds: 1 });
    const [a, b, c] = [await create('a'), await create('b'), await create('c')];
    const first = await start(a);
    const second = await start(b);
    expect([first.status, second.status]).toEqual([200, 200]);
    // Both idle past capacity.idleAfterSeconds, as the service counts it (the last activity, else
    // the editor's start); then `a`, started first, is used through the proxy.
    const idleMs = async (id: string) => {
      const r = await record(id);
      return Date.now() - (service.activity.lastActivity(r.manifest) ?? Date.parse(r.start_time));
    };
    await eventually(async () => (await idleMs(a)) >= 1000 && (await idleMs(b)) >= 1000);
    const page = await fetch(`${service.url}/vscode/${(await record(a)).port}/`);
    expect(page.status).toBe(200);
    await page.text();

    const started = await start(c);
    expect(started.status).toBe(200);
    expect(started.body.data.status).toBe('running');
    expect(processExists(second.body.data.pid)).toBe(false);
    expect(processExists(first.body.data.pid)).toBe(true);
    expect(live().map((e) => e.name).sort()).toEqual(['a', 'c']);
    const stopped = await record(b);
    expect(stopped).toMatchObject({ status: 'stopped', phase: 'Stopped', reason: 'StoppedForCapacity', pid: null });
    expect(stopped.message).toMatch(/^stopped to make room for server "c" \(c\)/);
    const events = (await service.request('GET', `/servers/${b}/events`)).body.data.events;
    expect(events.map((e: { reason: string }) => e.reason)).toContain('StoppedForCapacity');

    // It stays stopped although its spec still says running, also after a resync.
    await service.controller.reconcileNow('b');
    expect((await record(b)).reason).toBe('StoppedForCapacity');
    expect(live()).toHaveLength(2);

    // With no editor idle long enough, a start is refused as with whenFull refuse.
    await setCapacity({ idleAfterSeconds: 3600 });
    const refused = await start(b);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toBe('server "b" was not started: 2 of 2 editors are running (capacity.maxRunning), and no editor has been idle for capacity.idleAfterSeconds (3600 s) to stop instead: stop one, or raise capacity.maxRunning in the config');
    expect(live().map((e) => e.name).sort()).toEqual(['a', 'c']);
  });
});

describe('GET /health capacity', () => {
  it('counts the running editors and their memory as they are', async () => {
    const { service, create, start, live, health } = await serviceWith({ maxRunning: 3, maxMemoryMb: 'auto' });
    for (const name of ['a', 'b']) expect((await start(await create(name))).status).toBe(200);
    const figures = await eventually(async () => {
      const servers = (await service.request('GET', '/servers')).body as { status: string; memory_mb: number | null }[];
      const running = servers.filter((s) => s.status === 'running');
      if (running.some((s) => !s.memory_mb)) return undefined;
      const sum = running.reduce((total, s) => total + s.memory_mb!, 0);
      const c = (await health()).capacity;
      return Math.abs(c.memory_used_mb - sum) <= 2 ? c : undefined;
    });
    expect(figures.running).toBe(live().length);
    expect(figures.running).toBe(2);
    expect(figures.max_running).toBe(3);
    expect(figures.when_full).toBe('refuse');
    expect(figures.memory_limit_source).toMatch(/^auto: \d+ MB \(.+\) less \d+ MB kept for the service/);
    expect(figures.memory_limit_mb).toBeGreaterThan(0);
    expect(figures.memory_free_mb).toBe(figures.memory_limit_mb - figures.memory_used_mb);
    // A full fleet is not a problem of the service.
    expect((await health()).status).toBe('healthy');
  });
});
