// GET /servers/{id}/events and GET /servers/{id}/manifest against the real service and the stub
// editor: the events a server's life produces (created, started, stopped, crashed, an invalid
// manifest), bounded and gone with the server; the manifest file as it is on disk, never read
// through a link out of the folder; unknown ids and other users' servers answered 404.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { MAX_EVENTS_PER_SERVER, ServerEvents } from '../../src/index/server-events.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

const create = async (name: string, extensions: string[] = []) => {
  const res = await service.request('POST', '/servers', { name, extensions });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; port: number };
};
const eventsOf = async (id: string) => {
  const res = await service.request('GET', `/servers/${id}/events`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.status).toBe('success');
  return res.body.data.events as Array<{ time: string; type: string; reason: string; message: string }>;
};
const manifestPath = async (id: string) =>
  join(service.settings.manifestsDir, `${(await service.request('GET', `/servers/${id}`)).body.manifest}.yaml`);

describe('GET /servers/{id}/events', () => {
  it('records a server becoming Stopped, Started, Stopped again, and Crashed, oldest first', async () => {
    const { id } = await create('Eventful', ['ms-python.python']);
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status).toBe(200);
    const stopped = await service.request('POST', `/servers/${id}/stop`);
    expect(stopped.status).toBe(200);
    expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);
    const pid = (await service.request('GET', `/servers/${id}`)).body.pid;
    process.kill(pid, 'SIGKILL');
    const events = await eventually(async () => {
      const list = await eventsOf(id);
      return list.some((e) => e.reason === 'Crashed') && list;
    });
    for (const event of events) {
      expect(Object.keys(event).sort()).toEqual(['message', 'reason', 'time', 'type']);
      expect(new Date(event.time).toISOString()).toBe(event.time);
      expect(['Normal', 'Warning']).toContain(event.type);
      expect(event.message.length).toBeGreaterThan(0);
    }
    const times = events.map((e) => Date.parse(e.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // The phases in order, each once per transition (repeated reconciles add nothing).
    const phases = events.filter((e) => ['Stopped', 'Started', 'Crashed'].includes(e.reason)).map((e) => e.reason);
    expect(phases).toEqual(['Stopped', 'Started', 'Stopped', 'Started', 'Crashed']);
    const running = events.filter((e) => e.reason === 'Started');
    expect(running[1]).toMatchObject({ type: 'Normal' });
    expect(running[1].message).toContain(`pid ${pid}`);
    const crashed = events.find((e) => e.reason === 'Crashed')!;
    expect(crashed.type).toBe('Warning');
    expect(crashed.message).toContain('SIGKILL');
    // Conditions that moved: the workspace made, extensions installed.
    expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Created', 'Installed']));
  });

  it('records a manifest that became invalid as a Warning naming its problem', async () => {
    const { id } = await create('Broken later');
    const file = await manifestPath(id);
    const manifest = parse(await fs.readFile(file, 'utf8'));
    manifest.spec.port = 'eighty';
    await fs.writeFile(file, stringify(manifest));
    const invalid = await eventually(async () => (await eventsOf(id)).find((e) => e.reason === 'ManifestInvalid'));
    expect(invalid.type).toBe('Warning');
    expect(invalid.message).toContain('spec.port');
  });

  it('forgets the events of a deleted server, whose id then answers 404', async () => {
    const { id } = await create('Short lived');
    expect((await eventsOf(id)).length).toBeGreaterThan(0);
    expect((await service.request('DELETE', `/servers/${id}`)).status).toBe(200);
    const res = await service.request('GET', `/servers/${id}/events`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('SERVER_NOT_FOUND');
    // A new server of the same name starts with no history of the old one.
    const again = await create('Short lived');
    expect((await eventsOf(again.id)).filter((e) => e.reason === 'Started')).toEqual([]);
  });

  it('answers 404 in the envelope for an unknown id', async () => {
    const res = await service.request('GET', `/servers/${UNKNOWN_ID}/events`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 'error', error: { code: 'SERVER_NOT_FOUND' } });
    expect(res.body.error.message).toContain('GET /servers');
  });

  it(`keeps the last ${MAX_EVENTS_PER_SERVER} events of a server`, () => {
    const events = new ServerEvents();
    for (let i = 0; i < MAX_EVENTS_PER_SERVER + 20; i++) {
      events.add('alpha', { time: new Date(i * 1000).toISOString(), type: 'Normal', reason: 'Started', message: `start ${i}` });
    }
    const kept = events.list('alpha');
    expect(kept).toHaveLength(MAX_EVENTS_PER_SERVER);
    expect(kept[0].message).toBe('start 20');
    expect(kept.at(-1)!.message).toBe(`start ${MAX_EVENTS_PER_SERVER + 19}`);
  });
});

describe('GET /servers/{id}/manifest', () => {
  it('answers the file path and its text as it is on disk', async () => {
    const { id } = await create('Shown as YAML');
    const file = await manifestPath(id);
    const res = await service.request('GET', `/servers/${id}/manifest`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'success', data: { file, yaml: await fs.readFile(file, 'utf8') } });
    expect(parse(res.body.data.yaml).metadata.uid).toBe(id);
  });

  it('never reads a manifest replaced by a link to a file outside the folder', async () => {
    const { id } = await create('Linked away');
    const file = await manifestPath(id);
    const outside = join(service.root, 'secret.yaml');
    await fs.writeFile(outside, 'password: hunter2\n');
    await fs.rm(file);
    await fs.symlink(outside, file);
    // The controller keeps the server (its last valid manifest) and says why the file is not read.
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.manifest_errors?.length > 0);
    const res = await service.request('GET', `/servers/${id}/manifest`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('MANIFEST_UNREADABLE');
    expect(res.body.error.message).toContain('symbolic link');
    expect(JSON.stringify(res.body)).not.toContain('hunter2');
  });

  it('answers 404 in the envelope for an unknown id', async () => {
    const res = await service.request('GET', `/servers/${UNKNOWN_ID}/manifest`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 'error', error: { code: 'SERVER_NOT_FOUND' } });
  });
});

describe('under access: owner', () => {
  let owned: TestService;
  const ALICE = { 'X-Forwarded-Email': 'alice@example.com' };
  const BOB = { 'X-Forwarded-Email': 'bob@example.com' };

  beforeAll(async () => {
    owned = await startTestService({ requireIdentity: true, config: { access: 'owner', admins: [] } });
  });
  afterAll(async () => {
    await owned?.stop();
  });

  it("answers another user's server's events and manifest as an unknown id", async () => {
    const alices = await owned.request('POST', '/servers', { name: 'Alice only' }, ALICE);
    expect(alices.status).toBe(201);
    for (const path of ['events', 'manifest']) {
      expect((await owned.request('GET', `/servers/${alices.body.id}/${path}`, undefined, ALICE)).status, path).toBe(200);
      const res = await owned.request('GET', `/servers/${alices.body.id}/${path}`, undefined, BOB);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('SERVER_NOT_FOUND');
    }
  });
});
