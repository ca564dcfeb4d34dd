// GET /servers and GET /servers/{id} answer from the ServerFeed's cached serialisation (uptime
// spliced in): against the real service and the stub editor, the answer's bytes are those of
// JSON.stringify over serverView of every record, as the route built it per request before, after
// create, start, kill -9, a hand edit, an invalid manifest, stats samples, delete, a stray file
// without uid, and under `access: owner` for each user.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import { ownerOf } from '../../src/api/access.ts';
import { serverView } from '../../src/api/views.ts';
import { eventually, portRange, request, startTestService, type TestService } from '../helpers/service.ts';
import { nextCall } from '../helpers/wait.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com', 'X-Forwarded-User': '1002@42' };
const ADMIN = { 'X-Forwarded-Email': 'root@example.com', 'X-Forwarded-User': '1000@42' };

let service: TestService;

const UPTIME = /"uptime":(-?[0-9.e+-]+|null)/g;

/** The bytes the route answered before: JSON.stringify of serverView over the records `owner` may see (all without one). */
function expected(owner?: string, id?: string): string {
  const records = [...service.index.records.values()]
    .filter((r) => r.server?.metadata.uid && (owner === undefined || ownerOf(r.server) === owner))
    .filter((r) => id === undefined || r.server!.metadata.uid === id)
    .map((r) => serverView(r, r.server!.status?.runtimeRef ? service.stats.get(r.name) : undefined));
  return JSON.stringify(id === undefined ? records : records[0]);
}

/** The raw answer of a GET. */
async function raw(path: string, who: Record<string, string>): Promise<string> {
  const res = await fetch(service.url + path, { headers: who });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return res.text();
}

/** Same bytes once the uptimes are set aside, and each uptime within a second of the expected one. */
function same(answer: string, want: string): boolean {
  if (answer.replace(UPTIME, '"uptime":_') !== want.replace(UPTIME, '"uptime":_')) return false;
  const got = [...answer.matchAll(UPTIME)].map((m) => Number(m[1]));
  const wanted = [...want.matchAll(UPTIME)].map((m) => Number(m[1]));
  return got.every((u, i) => Math.abs(u - wanted[i]) < 1);
}

/**
 * Listens to what may change an answer while a request is under way: a stats sample, and a
 * record the controller changed, deleted or looked at again (the events the feed refreshes on).
 */
function onChange(listener: () => void): () => void {
  const { index } = service;
  const offs = [service.stats.onSample(listener), index.on('changed', listener), index.on('deleted', listener), index.on('reconciled', listener)];
  return () => {
    for (const off of offs) off();
  };
}

/**
 * The answer to `path` equals `want()` (the per-request view, computed after it). A stats sample
 * (every 0.5 s here) or a reconcile may land between the answer and the comparison: then it is
 * asked again, once that change has landed (at once when one did during the attempt, else after
 * the next one). A few tries, which a record left stale would fail every time.
 */
async function answersView(path: string, who: Record<string, string>, want: () => string): Promise<void> {
  let changes = 0;
  const off = onChange(() => changes++);
  try {
    for (let attempt = 0; ; attempt++) {
      const before = changes;
      const answer = await raw(path, who);
      const wanted = want();
      if (same(answer, wanted)) return;
      if (attempt === 5) expect(answer).toBe(wanted);
      if (changes === before) await nextCall(onChange, undefined, 5_000);
    }
  } finally {
    off();
  }
}

/** The fast answer equals the per-request view for every user and every listed record. */
async function matchesView(): Promise<void> {
  for (const [who, owner] of [[ADMIN, undefined], [ALICE, 'alice@example.com'], [BOB, 'bob@example.com']] as const) {
    await answersView('/servers', who, () => expected(owner));
    for (const record of JSON.parse(expected(owner)) as { id: string }[]) {
      await answersView(`/servers/${record.id}`, who, () => expected(undefined, record.id));
    }
  }
}

const byId = async (id: string) => JSON.parse(await raw(`/servers/${id}`, ADMIN));
const manifestFile = (manifest: string) => join(service.settings.manifestsDir, `${manifest}.yaml`);

beforeAll(async () => {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-list-fast-'));
  const configFile = join(root, 'devbox.config.yaml');
  await fs.writeFile(configFile, stringify({
    ports: portRange(),
    editor: { stopGraceSeconds: 2, startTimeoutSeconds: 15 },
    controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5 },
    access: 'owner',
    admins: ['root@example.com'],
  }));
  service = await startTestService({ root, configFile, requireIdentity: true });
});
afterAll(async () => {
  await service?.stop();
});

describe('GET /servers from the cached records', () => {
  it('answers the bytes of the per-request view through create, start, kill -9, hand edits, an invalid manifest, stats and delete', async () => {
    const alice = (await request(service.url, 'POST', '/servers', { name: 'Alice "fast" box ✓' }, ALICE)).body;
    const bob = (await request(service.url, 'POST', '/servers', { name: 'Bob box' }, BOB)).body;
    expect([alice.id, bob.id].every(Boolean)).toBe(true);
    await matchesView();

    // Started: the very next answer says so, with the pid the start answered.
    const started = await request(service.url, 'POST', `/servers/${alice.id}/start`, undefined, ALICE);
    expect(started.status).toBe(200);
    const pid = started.body.data.pid;
    expect(await byId(alice.id)).toMatchObject({ status: 'running', pid });
    expect(JSON.parse(await raw('/servers', ALICE))[0]).toMatchObject({ status: 'running', pid });
    await matchesView();

    // Stats samples fill in CPU and memory.
    await eventually(async () => (await byId(alice.id)).memory_mb > 0);
    await matchesView();
    // The uptime is spliced in per answer from the clock (Date.now): moved on 1.1 s, the cached
    // record answers an uptime more than a second longer.
    const uptime = (await byId(alice.id)).uptime;
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 1100);
      expect((await byId(alice.id)).uptime).toBeGreaterThan(uptime + 1);
    } finally {
      vi.useRealTimers();
    }

    // kill -9: the record follows the crash.
    process.kill(pid, 'SIGKILL');
    await eventually(async () => (await byId(alice.id)).pid !== pid);
    await matchesView();
    expect(await byId(alice.id)).toMatchObject({ pid: null, uptime: 0, cpu_percent: 0, memory_mb: 0 });

    // A hand edit of the manifest.
    const file = manifestFile((await byId(bob.id)).manifest);
    const doc = parse(await fs.readFile(file, 'utf8'));
    doc.spec.displayName = 'Bob renamed by hand';
    await fs.writeFile(file, stringify(doc));
    await eventually(async () => (await byId(bob.id)).name === 'Bob renamed by hand');
    await matchesView();

    // An invalid manifest: the last valid record, with its problems.
    await fs.writeFile(file, 'spec: [not, a, spec\n');
    await eventually(async () => (await byId(bob.id)).manifest_errors !== undefined);
    await matchesView();
    await fs.writeFile(file, stringify(doc));
    await eventually(async () => (await byId(bob.id)).manifest_errors === undefined);
    await matchesView();

    // A file that was never valid has no uid: not listed.
    await fs.writeFile(manifestFile('stray'), 'kind: nonsense\n');
    await eventually(() => service.index.records.get('stray')?.problems !== undefined);
    await matchesView();
    expect(JSON.parse(await raw('/servers', ADMIN)).map((r: { id: string }) => r.id)).toEqual([alice.id, bob.id]);

    // Deleted: gone from the very next answer.
    expect((await request(service.url, 'DELETE', `/servers/${alice.id}`, undefined, ALICE)).status).toBeLessThan(300);
    expect(JSON.parse(await raw('/servers', ADMIN)).map((r: { id: string }) => r.id)).toEqual([bob.id]);
    expect((await fetch(`${service.url}/servers/${alice.id}`, { headers: ADMIN })).status).toBe(404);
    await matchesView();
  });
});
