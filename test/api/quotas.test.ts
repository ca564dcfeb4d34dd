// Quotas per person (capacity.perPerson) through the running service with identity required: a
// create over the person's servers, or a start over their running editors or memory, answers 409
// QUOTA_EXCEEDED naming the limit and the servers that use it, and writes nothing; another person
// is not held back, admins are exempt, an edit of the config file applies at once; a hand-written
// manifest over its owner's quota waits (QuotaExceeded) and starts when their use drops; GET
// /health and /metrics show each person's use.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually, portRange, processExists, runningEditors, startTestService, type TestService } from '../helpers/service.ts';

const ALICE = { 'X-Forwarded-Email': 'Alice@Example.com', 'X-Forwarded-User': '1001@42' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com', 'X-Forwarded-User': '1002@42' };
const ROOT = { 'X-Forwarded-Email': 'root@example.com', 'X-Forwarded-User': '1000@42' };
type Who = Record<string, string>;
type Limits = { runningEditors?: number; servers?: number; memoryMb?: number };

const services: TestService[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
});

/** A service reading a config file (so a test can edit the limits live) with these limits per person. */
async function serviceWith(perPerson: Limits) {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-quotas-'));
  const configFile = join(root, 'devbox.config.yaml');
  const ports = portRange();
  const config = (limits: Limits) => stringify({
    ports,
    editor: { stopGraceSeconds: 2, startTimeoutSeconds: 15 },
    controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5 },
    capacity: { maxRunning: 0, maxMemoryMb: 0, perPerson: limits },
    admins: ['Root@Example.com'],
  });
  await fs.writeFile(configFile, config(perPerson));
  const service = await startTestService({ root, configFile, requireIdentity: true });
  services.push(service);
  const as = (who: Who) => ({
    create: (name: string) => service.request('POST', '/servers', { name }, who),
    start: (id: string) => service.request('POST', `/servers/${id}/start`, undefined, who),
    stop: (id: string) => service.request('POST', `/servers/${id}/stop`, undefined, who),
    remove: (id: string) => service.request('DELETE', `/servers/${id}`, undefined, who),
  });
  const created = async (who: Who, name: string) => {
    const answer = await as(who).create(name);
    expect(answer.status).toBe(201);
    return answer.body.id as string;
  };
  const manifests = async () => (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml')).sort();
  const live = () => runningEditors(service.settings.dataDir).filter((e) => processExists(e.identity.pid)).map((e) => e.name).sort();
  const perPersonHealth = async () => (await service.request('GET', '/health', undefined, ROOT)).body.capacity.per_person;
  /** Saves new limits the way an editor does, and waits until GET /health shows them. */
  const setLimits = async (limits: Limits) => {
    await fs.writeFile(`${configFile}.tmp`, config(limits));
    await fs.rename(`${configFile}.tmp`, configFile);
    const want = { running_editors: limits.runningEditors || null, servers: limits.servers || null, memory_mb: limits.memoryMb || null };
    await eventually(async () => JSON.stringify((await perPersonHealth()).limits) === JSON.stringify(want));
  };
  return { service, as, created, live, manifests, perPersonHealth, setLimits };
}

const manifest = (name: string, owner: string) => stringify({
  apiVersion: 'devbox.dev/v1alpha1',
  kind: 'EditorServer',
  metadata: { name, annotations: { 'devbox.dev/owner': owner } },
  spec: { displayName: name, running: true },
});

describe('capacity.perPerson.runningEditors', () => {
  it('refuses a third start of one person with 409 naming the limit and their editors, and lets another person start', async () => {
    const { service, as, created, live } = await serviceWith({ runningEditors: 2 });
    const [a, b, c] = [await created(ALICE, 'api-1'), await created(ALICE, 'api-2'), await created(ALICE, 'api-3')];
    expect((await as(ALICE).start(a)).status).toBe(200);
    expect((await as(ALICE).start(b)).status).toBe(200);
    const file = join(service.settings.manifestsDir, 'api-3.yaml');
    const before = await fs.readFile(file, 'utf8');

    const refused = await as(ALICE).start(c);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(refused.body.error.message).toBe('server "api-3" was not started: alice@example.com runs 2 of 2 editors allowed per person (capacity.perPerson.runningEditors): api-1, api-2; stop one first');
    expect(refused.body.error.details).toEqual({
      limit: 'capacity.perPerson.runningEditors', person: 'alice@example.com', allowed: 2, used: 2, total: 2,
      servers: [{ id: a, manifest: 'api-1', name: 'api-1' }, { id: b, manifest: 'api-2', name: 'api-2' }],
    });
    // Nothing was written and nothing started.
    expect(await fs.readFile(file, 'utf8')).toBe(before);
    expect(live()).toEqual(['api-1', 'api-2']);

    // Bob's quota is his own.
    expect((await as(BOB).start(await created(BOB, 'bobs'))).status).toBe(200);
    expect(live()).toEqual(['api-1', 'api-2', 'bobs']);

    // One of Alice's stopped: her third starts.
    expect((await as(ALICE).stop(a)).status).toBe(200);
    expect((await as(ALICE).start(c)).status).toBe(200);
    expect(live()).toEqual(['api-2', 'api-3', 'bobs']);
  });

  it('gives a person\'s last slot to exactly one of two concurrent starts', async () => {
    const { as, created, live } = await serviceWith({ runningEditors: 1 });
    const [a, b] = [await created(ALICE, 'a'), await created(ALICE, 'b')];
    const answers = await Promise.all([as(ALICE).start(a), as(ALICE).start(b)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expect(answers.find((r) => r.status === 409)!.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(live()).toHaveLength(1);
  });

  it('follows an edit of the config file: a raised limit admits the start at once, a removed one lifts it', async () => {
    const { as, created, live, setLimits } = await serviceWith({ runningEditors: 1 });
    const [a, b, c] = [await created(ALICE, 'a'), await created(ALICE, 'b'), await created(ALICE, 'c')];
    expect((await as(ALICE).start(a)).status).toBe(200);
    expect((await as(ALICE).start(b)).status).toBe(409);

    await setLimits({ runningEditors: 2 });
    expect((await as(ALICE).start(b)).status).toBe(200);
    const third = await as(ALICE).start(c);
    expect(third.status).toBe(409);
    expect(third.body.error.message).toContain('runs 2 of 2 editors allowed per person');

    await setLimits({ runningEditors: 0 });
    expect((await as(ALICE).start(c)).status).toBe(200);
    expect(live()).toEqual(['a', 'b', 'c']);
  });
});

describe('capacity.perPerson.servers', () => {
  it('refuses a create over the person\'s servers with 409 and writes no manifest; a delete makes room', async () => {
    const { service, as, created, manifests } = await serviceWith({ servers: 2 });
    const a = await created(ALICE, 'one');
    await created(ALICE, 'two');
    const refused = await as(ALICE).create('three');
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(refused.body.error.message).toBe('server "three" was not created: alice@example.com has 2 of 2 servers allowed per person (capacity.perPerson.servers): one, two; delete one first');
    expect(refused.body.error.details).toMatchObject({ limit: 'capacity.perPerson.servers', person: 'alice@example.com', allowed: 2, used: 2 });
    expect(await manifests()).toEqual(['one.yaml', 'two.yaml']);
    // Every way of creating passes the same limit.
    const steps = await service.request('POST', '/servers/create-metadata', { name: 'three' }, ALICE);
    expect(steps.status).toBe(409);
    expect(steps.body.error.code).toBe('QUOTA_EXCEEDED');

    // Bob is not Alice.
    await created(BOB, 'bobs');

    expect((await as(ALICE).remove(a)).status).toBe(200);
    await created(ALICE, 'three');
    expect(await manifests()).toEqual(['bobs.yaml', 'three.yaml', 'two.yaml']);
  });

  it('gives the last server to exactly one of two concurrent creates', async () => {
    const { as, created, manifests } = await serviceWith({ servers: 2 });
    await created(ALICE, 'first');
    const answers = await Promise.all([as(ALICE).create('x'), as(ALICE).create('y')]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(await manifests()).toHaveLength(2);
  });
});

describe('capacity.perPerson.memoryMb', () => {
  it('refuses a start the person\'s editors leave no room for, with the measured figures', async () => {
    // A stub editor's resident memory is far below 200 MB, so one more editor is counted at 200 MB:
    // with 210 MB per person, one editor fits and a second (its editor uses more than 10 MB) does not.
    const { service, as, created, live } = await serviceWith({ memoryMb: 210 });
    const [a, b] = [await created(ALICE, 'a'), await created(ALICE, 'b')];
    expect((await as(ALICE).start(a)).status).toBe(200);
    const sampled = await eventually(async () => {
      const mb = (await service.request('GET', `/servers/${a}`, undefined, ALICE)).body.memory_mb;
      return typeof mb === 'number' && mb > 0 ? mb : undefined;
    });
    const refused = await as(ALICE).start(b);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(refused.body.error.message).toMatch(/^server "b" was not started: alice@example\.com's editors use \d+ MB of 210 MB allowed per person \(capacity\.perPerson\.memoryMb\) and one more needs about 200 MB: a; stop one first$/);
    expect(Math.abs(refused.body.error.details.used - sampled)).toBeLessThanOrEqual(5);
    expect(live()).toEqual(['a']);
    // Bob's memory is his own.
    expect((await as(BOB).start(await created(BOB, 'c'))).status).toBe(200);
  });
});

describe('admins', () => {
  it('are exempt from every limit per person', async () => {
    const { as, created, live, perPersonHealth } = await serviceWith({ runningEditors: 1, servers: 1, memoryMb: 100 });
    const ids = [await created(ROOT, 'r1'), await created(ROOT, 'r2'), await created(ROOT, 'r3')];
    for (const id of ids) expect((await as(ROOT).start(id)).status).toBe(200);
    expect(live()).toEqual(['r1', 'r2', 'r3']);
    const root = (await perPersonHealth()).people.find((p: { person: string }) => p.person === 'root@example.com');
    expect(root).toMatchObject({ running: 3, servers: 3, exempt: true });
  });
});

describe('a hand-written manifest', () => {
  it('over its owner\'s quota stays stopped with the reason, and starts when one of their editors stops', async () => {
    const { service, as, created, live } = await serviceWith({ runningEditors: 1 });
    const a = await created(ALICE, 'a');
    expect((await as(ALICE).start(a)).status).toBe(200);
    // The owner is written as the platform forwards it; the quota counts it in lower case.
    await fs.writeFile(join(service.settings.manifestsDir, 'handmade.yaml'), manifest('handmade', 'ALICE@example.com'));
    const waiting = await eventually(async () => {
      const found = (await service.request('GET', '/servers', undefined, ROOT)).body.find((s: { manifest: string }) => s.manifest === 'handmade');
      return found?.reason === 'QuotaExceeded' ? found : undefined;
    });
    // Held before its editor is spawned, as a start beyond the fleet's capacity is.
    expect(waiting).toMatchObject({ phase: 'Pending', pid: null });
    expect(waiting.message).toBe('alice@example.com runs 1 of 1 editors allowed per person (capacity.perPerson.runningEditors): a; stop one first; it starts by itself when alice@example.com\'s use drops below the limit');
    const events = (await service.request('GET', `/servers/${waiting.id}/events`, undefined, ROOT)).body.data.events;
    expect(events.map((e: { reason: string }) => e.reason)).toContain('QuotaExceeded');
    expect((await service.request('GET', '/health', undefined, ROOT)).body.capacity.waiting).toEqual(['handmade']);
    // Bob's hand-written manifest is not Alice's to wait for.
    await fs.writeFile(join(service.settings.manifestsDir, 'bobs.yaml'), manifest('bobs', 'bob@example.com'));
    await eventually(() => live().includes('bobs'));
    expect(live()).toEqual(['a', 'bobs']);

    expect((await as(ALICE).stop(a)).status).toBe(200);
    const started = await eventually(async () => {
      const r = (await service.request('GET', `/servers/${waiting.id}`, undefined, ROOT)).body;
      return r.status === 'running' ? r : undefined;
    });
    expect(processExists(started.pid)).toBe(true);
    expect(live()).toEqual(['bobs', 'handmade']);
  });
});

describe('GET /health and /metrics', () => {
  it('show each person\'s use against the limits, only for people with servers', async () => {
    const { service, as, created, perPersonHealth } = await serviceWith({ runningEditors: 3, servers: 5 });
    const [a] = [await created(ALICE, 'a'), await created(ALICE, 'b')];
    expect((await as(ALICE).start(a)).status).toBe(200);
    await created(BOB, 'c');
    const figures = await eventually(async () => {
      const f = await perPersonHealth();
      return f.people.find((p: { person: string; memory_mb: number }) => p.person === 'alice@example.com' && p.memory_mb > 0) ? f : undefined;
    });
    expect(figures.limits).toEqual({ running_editors: 3, servers: 5, memory_mb: null });
    expect(figures.people_total).toBe(2);
    expect(figures.people.map((p: { person: string }) => p.person)).toEqual(['alice@example.com', 'bob@example.com']);
    expect(figures.people[0]).toMatchObject({ running: 1, servers: 2, exempt: false });
    expect(figures.people[1]).toEqual({ person: 'bob@example.com', running: 0, servers: 1, memory_mb: 0, exempt: false });

    const metrics = await (await fetch(`${service.url}/metrics`, { headers: ROOT })).text();
    expect(metrics).toContain('devbox_person_running_editors{person="alice@example.com"} 1');
    expect(metrics).toContain('devbox_person_servers{person="alice@example.com"} 2');
    expect(metrics).toContain('devbox_person_servers{person="bob@example.com"} 1');
    expect(metrics).toMatch(/devbox_person_memory_bytes\{person="alice@example.com"\} [1-9]\d*/);

    // A person whose last server goes is no longer listed.
    const bobs = (await service.request('GET', '/servers', undefined, BOB)).body.find((s: { name: string }) => s.name === 'c');
    expect((await as(BOB).remove(bobs.id)).status).toBe(200);
    await eventually(async () => (await perPersonHealth()).people_total === 1);
    expect(await (await fetch(`${service.url}/metrics`, { headers: ROOT })).text()).not.toContain('bob@example.com');
  });
});

describe('waking an editor stopped for idleness while its owner is at their quota', () => {
  it('answers the starting page\'s poll 409 QUOTA_EXCEEDED with the quota\'s message, not the fleet\'s', async () => {
    const { service, as, created } = await serviceWith({ runningEditors: 1 });
    await fs.writeFile(join(service.settings.manifestsDir, 'napping.yaml'), stringify({
      apiVersion: 'devbox.dev/v1alpha1',
      kind: 'EditorServer',
      metadata: { name: 'napping', annotations: { 'devbox.dev/owner': 'alice@example.com' } },
      spec: { displayName: 'napping', running: true, idleTimeoutSeconds: 2 },
    }));
    const napping = await eventually(async () => {
      const found = ((await service.request('GET', '/servers', undefined, ALICE)).body as { manifest: string; status: string; reason: string | null; port: number }[])
        .find((r) => r.manifest === 'napping');
      return found?.status === 'stopped' && found.reason === 'IdleTimeout' ? found : undefined;
    }, 30_000);
    // Her one editor now runs elsewhere.
    expect((await as(ALICE).start(await created(ALICE, 'api-1'))).status).toBe(200);
    const refused = await eventually(async () => {
      const res = await fetch(`${service.url}/vscode/${napping.port}/`, { headers: { ...ALICE, 'x-devbox-wake': 'poll' } });
      const body = await res.json() as { error: { code: string; message: string } };
      return res.status === 409 ? body : undefined;
    }, 20_000);
    expect(refused.error.code).toBe('QUOTA_EXCEEDED');
    expect(refused.error.message).toMatch(/^server "napping" cannot start now: .*alice@example\.com runs 1 of 1 editors allowed per person \(capacity\.perPerson\.runningEditors\): api-1/);
  }, 60_000);
});

describe('capacity.perPerson.servers and an undelete', () => {
  it('refuses to bring back a deleted server over its owner\'s servers limit, and brings it back once one is gone', async () => {
    const keep = await fs.mkdtemp(join(tmpdir(), 'devbox-quotas-keep-'));
    const service = await startTestService({ requireIdentity: true, persistTo: keep, config: { capacity: { perPerson: { runningEditors: 0, servers: 1, memoryMb: 0 } } } });
    services.push(service);
    const kept = (await service.request('POST', '/servers', { name: 'Kept box' }, ALICE)).body;
    expect((await service.request('DELETE', `/servers/${kept.id}`, undefined, ALICE)).status).toBe(200);
    await eventually(async () => ((await service.request('GET', '/snapshots/deleted', undefined, ALICE)).body.data?.servers ?? [])
      .some((s: { name: string }) => s.name === 'kept-box'));
    const other = await service.request('POST', '/servers', { name: 'Other box' }, ALICE);
    expect(other.status).toBe(201);

    const refused = await service.request('POST', '/snapshots/deleted/kept-box/restore', undefined, ALICE);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(refused.body.error.message).toMatch(/^server "kept-box" was not brought back: alice@example\.com has 1 of 1 servers allowed per person \(capacity\.perPerson\.servers\): other-box; delete one first$/);
    expect(await fs.readdir(service.settings.manifestsDir)).not.toContain('kept-box.yaml');

    expect((await service.request('DELETE', `/servers/${other.body.id}`, undefined, ALICE)).status).toBe(200);
    const back = await service.request('POST', '/snapshots/deleted/kept-box/restore', undefined, ALICE);
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(back.body.id).toBe(kept.id);
  }, 60_000);
});
