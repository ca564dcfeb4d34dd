// The audit trail against the running service and the stub editor: each change through the API
// and the dashboard (refusals too), the controller's own stops, and hand edits of the manifests
// folder become entries with who, which door, what and how it ended; GET /audit filters and pages
// them newest first; the chain verifies and its newest hash is the one GET /health reports.
import { promises as fs } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.ts';
import { documentSchemas, pointer } from '../helpers/openapi.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const DASHBOARD = { 'X-Devbox-Client': 'dashboard' };
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    config: {
      capacity: { maxRunning: 1, maxMemoryMb: 0, whenFull: 'stopIdlest', idleAfterSeconds: 1 },
      extensionGroups: { data: { name: 'data', description: 'data tools', extensions: [], user_settings: { 'csv.rows': 100 } } },
    },
  });
});
afterAll(async () => {
  await service?.stop();
});

const audit = async (query = ''): Promise<{ entries: AuditEntry[]; next_cursor: string | null; last_seq: number; last_hash: string }> => {
  const answer = await service.request('GET', `/audit${query}`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body;
};
/** The newest entry of this server and action (that passes `which`), once there is one. */
const entryOf = (server: string, action: string, which: (entry: AuditEntry) => boolean = () => true) =>
  eventually(async () => (await audit(`?server=${encodeURIComponent(server)}&action=${action}`)).entries.find(which), 30_000);
const manifestFile = (name: string) => `${service.settings.manifestsDir}/${name}.yaml`;

describe('what the API and the dashboard change', () => {
  let a: string;
  let b: string;

  it('records creates with their door and actor, and a refusal with its error code', async () => {
    const created = await service.request('POST', '/servers', { name: 'Audit A', extensions: [] });
    expect(created.status).toBe(201);
    a = created.body.id;
    const fromDashboard = await service.request('POST', '/servers', { name: 'Audit B' }, DASHBOARD);
    expect(fromDashboard.status).toBe(201);
    b = fromDashboard.body.id;

    expect(await entryOf(a, 'create')).toMatchObject({ actor: 'local', door: 'api', server_id: a, server_name: 'audit-a', outcome: 'ok', detail: 'with extensions' });
    expect(await entryOf(b, 'create')).toMatchObject({ actor: 'local', door: 'dashboard', server_id: b, server_name: 'audit-b', outcome: 'ok' });

    const refused = await service.request('POST', `/servers/${UNKNOWN_ID}/start`);
    expect(refused.status).toBe(404);
    expect(await entryOf(UNKNOWN_ID, 'start')).toMatchObject({ outcome: 'refused', code: 'SERVER_NOT_FOUND', server_name: null });
  });

  it('records start, an edit naming what changed, and the controller\'s stop to make room, with the start that caused it', async () => {
    const started = await service.request('POST', `/servers/${a}/start`);
    expect(started.status).toBe(200);
    expect(await entryOf(a, 'start')).toMatchObject({ actor: 'local', door: 'api', outcome: 'ok' });

    const edited = await service.request('POST', `/servers/${a}/apply-group-settings`, { group_name: 'data' });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect((await entryOf(a, 'edit')).detail).toBe('extensionGroups, settings: group data');

    // Capacity holds one editor: once `a` has been idle a second, starting `b` stops it.
    await eventually(() => Date.now() - (service.activity.lastActivity('audit-a') ?? 0) >= 1000, 10_000);
    const second = await service.request('POST', `/servers/${b}/start`, undefined, DASHBOARD);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(await entryOf(b, 'start')).toMatchObject({ door: 'dashboard', outcome: 'ok' });
    const made = await entryOf(a, 'capacity-stop');
    expect(made).toMatchObject({ actor: 'controller', door: 'controller', server_id: a, outcome: 'ok' });
    expect(made.detail).toContain('stopped to make room for server "Audit B"');
    expect((await audit(`?server=${a}&action=capacity-stop`)).entries).toHaveLength(1);
  });

  it('records restart, stop and delete, in the order they happened', async () => {
    expect((await service.request('POST', `/servers/${b}/restart`)).status).toBe(200);
    expect((await service.request('POST', `/servers/${b}/stop`)).status).toBe(200);
    expect((await service.request('DELETE', `/servers/${a}`)).status).toBe(200);
    const deleted = await entryOf(a, 'delete');
    expect(deleted).toMatchObject({ actor: 'local', door: 'api', server_id: a, server_name: 'audit-a', outcome: 'ok' });
    const recent = (await audit('?limit=3')).entries;
    expect(recent.map((e) => `${e.action} ${e.server_name}`)).toEqual(['delete audit-a', 'stop audit-b', 'restart audit-b']);
  });

  it('filters by server, person, action, door and time, and pages newest first with a cursor', async () => {
    const all = (await audit('?limit=500')).entries;
    expect(all.length).toBeGreaterThanOrEqual(10);
    expect(all.map((e) => e.seq)).toEqual([...all.map((e) => e.seq)].sort((x, y) => y - x));

    const ofB = (await audit('?server=audit-b&limit=500')).entries;
    expect(ofB.length).toBeGreaterThan(0);
    expect(ofB.every((e) => e.server_name === 'audit-b')).toBe(true);
    expect((await audit(`?server=${b}&limit=500`)).entries).toEqual(ofB);
    expect((await audit('?actor=controller')).entries.every((e) => e.actor === 'controller')).toBe(true);
    const lifecycle = (await audit('?action=start,stop&limit=500')).entries;
    expect(new Set(lifecycle.map((e) => e.action))).toEqual(new Set(['start', 'stop']));
    expect((await audit('?door=dashboard')).entries.map((e) => e.action).sort()).toEqual(['create', 'start']);

    const middle = all[Math.floor(all.length / 2)];
    const until = (await audit(`?until=${encodeURIComponent(middle.time)}&limit=500`)).entries;
    expect(until.every((e) => e.time <= middle.time)).toBe(true);
    expect(until.some((e) => e.seq === middle.seq)).toBe(true);
    const since = (await audit(`?since=${encodeURIComponent(middle.time)}&limit=500`)).entries;
    expect(since.every((e) => e.time >= middle.time)).toBe(true);

    const paged: number[] = [];
    let cursor = '';
    for (let pages = 0; pages < 100; pages++) {
      const page = await audit(`?limit=3${cursor}`);
      expect(page.entries.length).toBeLessThanOrEqual(3);
      paged.push(...page.entries.map((e) => e.seq));
      if (page.next_cursor === null) break;
      cursor = `&cursor=${page.next_cursor}`;
    }
    expect(paged).toEqual(all.map((e) => e.seq));

    const server = await service.request('GET', `/servers/${b}/audit?limit=500`);
    expect(server.status).toBe(200);
    expect(server.body.entries).toEqual(ofB);

    for (const bad of ['?limit=0', '?limit=501', '?cursor=abc', '?since=yesterday', '?colour=red']) {
      const answer = await service.request('GET', `/audit${bad}`);
      expect(answer.status, bad).toBe(400);
      expect(answer.body.error.code).toBe('INVALID_PAGE');
    }
    expect((await service.request('GET', `/servers/${UNKNOWN_ID}/audit`)).status).toBe(404);
  });
});

describe('what comes through the manifests folder, and the controller\'s idle stop', () => {
  it('records a hand-written manifest, its hand edits with the fields changed, the idle stop, and its removal, as door manifest', async () => {
    const write = (lines: string[]) => fs.writeFile(manifestFile('by-hand'), [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', '  name: by-hand', 'spec:', ...lines, '',
    ].join('\n'));
    await write(['  displayName: By hand', '  running: false']);
    const created = await entryOf('by-hand', 'create');
    expect(created).toMatchObject({ actor: 'file', door: 'manifest', outcome: 'ok', detail: 'running: false' });
    const id = await eventually(async () => (await service.request('GET', '/servers')).body.find((r: { manifest: string }) => r.manifest === 'by-hand')?.id, 20_000);
    // Written before the controller gave it its id: the server's own history still holds it.
    expect((await service.request('GET', `/servers/${id}/audit`)).body.entries.map((e: AuditEntry) => e.seq)).toContain(created.seq);

    await write(['  displayName: Made by hand', '  running: true', '  idleTimeoutSeconds: 2']);
    const edit = await entryOf('by-hand', 'edit');
    expect(edit).toMatchObject({ actor: 'file', door: 'manifest', outcome: 'ok', server_id: id });
    expect(edit.detail).toBe('spec: displayName; idleTimeoutSeconds; running: false → true');

    // Nobody uses it: the controller stops it after its 2 s.
    const idle = await entryOf('by-hand', 'idle-stop');
    expect(idle).toMatchObject({ actor: 'controller', door: 'controller', server_id: id, outcome: 'ok' });
    expect(idle.detail).toMatch(/^idle for 2 s: no input since \d\d:\d\d/);
    // One stop, one entry (its Stopping and Stopped commits carry the same reason).
    expect((await audit('?server=by-hand&action=idle-stop')).entries).toHaveLength(1);

    await fs.writeFile(manifestFile('by-hand'), 'spec: [not, a, manifest\n');
    const invalid = await entryOf('by-hand', 'edit', (e) => e.outcome === 'refused');
    expect(invalid).toMatchObject({ door: 'manifest', code: 'MANIFEST_INVALID' });
    expect(invalid.detail).not.toContain('not, a');

    await fs.rm(manifestFile('by-hand'));
    expect(await entryOf('by-hand', 'delete')).toMatchObject({ actor: 'file', door: 'manifest', outcome: 'ok', detail: 'the manifest was removed' });
    // The API's own writes are not taken for hand edits.
    expect((await audit('?door=manifest&limit=500')).entries.every((e) => e.server_name === 'by-hand')).toBe(true);
  });
});

describe('the chain', () => {
  it('verifies, and its newest hash is the one GET /health and GET /audit report', async () => {
    const verified = await service.request('GET', '/audit/verify');
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ ok: true, files: 1 });
    const page = await audit('?limit=1');
    const health = (await service.request('GET', '/health')).body;
    expect(health.audit).toMatchObject({ last_seq: page.last_seq, last_hash: page.last_hash });
    expect(page.entries[0]).toMatchObject({ seq: page.last_seq, hash: page.last_hash });
    expect(verified.body.last_seq).toBeLessThanOrEqual(page.last_seq);
  });

  it('answers in the shapes GET /openapi.json documents', async () => {
    const doc = (await service.request('GET', '/openapi.json')).body;
    const schemas = documentSchemas(doc);
    const id = (await audit('?action=create&server=audit-b')).entries[0].server_id!;
    for (const [path, url, status] of [
      ['/audit', '/audit?limit=5', 200], ['/audit', '/audit?limit=nine', 400], ['/audit/verify', '/audit/verify', 200],
      ['/servers/{id}/audit', `/servers/${id}/audit`, 200], ['/servers/{id}/audit', `/servers/${UNKNOWN_ID}/audit`, 404],
    ] as const) {
      const answer = await service.request('GET', url);
      expect(answer.status, url).toBe(status);
      const validate = schemas.at(pointer('paths', path, 'get', 'responses', String(status), 'content', 'application/json', 'schema'));
      expect(validate(answer.body) ? [] : validate.errors, `${url}: ${JSON.stringify(answer.body)}`).toEqual([]);
    }
  });
});
