// GET /servers?watch=1 against the real service and the stub editor: the list as ADDED, SYNCED,
// then every change (create, start, a crash, a hand edit, stats, delete) as it happens, each
// record the one GET /servers answers; per-user streams under `access: owner`; a client that
// stops reading dropped while the others go on; bad watch values refused; streams ended on close.
import { promises as fs } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { openWatch, type WatchEvent, type WatchStream } from '../helpers/watch-stream.ts';

let service: TestService;
const streams: WatchStream[] = [];

async function watch(headers: Record<string, string> = {}, on = service): Promise<WatchStream> {
  const stream = await openWatch(on.url, headers);
  streams.push(stream);
  return stream;
}

/** The record GET /servers lists for this id. */
async function listed(id: string, headers: Record<string, string> = {}, on = service): Promise<any> {
  const list = await on.request('GET', '/servers', undefined, headers);
  expect(list.status).toBe(200);
  return list.body.find((r: any) => r.id === id);
}

/** A record compared field by field, uptime apart (it moves with the clock; clients compute it from start_time). */
function withoutUptime(record: any): any {
  expect(typeof record.uptime).toBe('number');
  const { uptime: _uptime, ...rest } = record;
  return rest;
}

const manifestFile = (record: { manifest: string }) => join(service.settings.manifestsDir, `${record.manifest}.yaml`);

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await service?.stop();
});

describe('GET /servers?watch=1', () => {
  it('answers an event stream: one ADDED per server with its GET /servers record, then SYNCED', async () => {
    const first = await service.request('POST', '/servers', { name: 'Existing one' });
    const second = await service.request('POST', '/servers', { name: 'Existing two' });
    expect([first.status, second.status]).toEqual([201, 201]);
    const stream = await watch();
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(stream.headers['cache-control']).toBe('no-cache');
    expect(stream.headers['x-accel-buffering']).toBe('no');
    const synced = await stream.next((e) => e.type === 'SYNCED');
    expect(synced.object).toBeNull();
    const added = stream.events.slice(0, stream.events.indexOf(synced));
    expect(added.every((e) => e.type === 'ADDED')).toBe(true);
    const list = (await service.request('GET', '/servers')).body;
    expect(added.map((e) => e.object.id)).toEqual(list.map((r: any) => r.id));
    expect(added.map((e) => e.object.id)).toEqual(expect.arrayContaining([first.body.id, second.body.id]));
    for (const [i, event] of added.entries()) expect(withoutUptime(event.object)).toEqual(withoutUptime(list[i]));
    // Data-only messages: an id line and one data line each.
    for (const message of stream.raw) expect(message).toMatch(/^id: \d+\ndata: \{"type":"[A-Z]+","object":.*\}$/);
    expect(stream.problems).toEqual([]);
  });

  it('follows a server through create, start, a kill -9, a hand edit and delete, in records GET /servers answers', async () => {
    const stream = await watch();
    await stream.next((e) => e.type === 'SYNCED');

    const created = await service.request('POST', '/servers', { name: 'Watched box' });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const added = await stream.next((e) => e.type === 'ADDED' && e.object.id === id);
    expect(added.object).toMatchObject({ id, name: 'Watched box', port: created.body.port, pid: null });
    // The stream's latest record of it is the one GET /servers answers.
    const latest = () => stream.events.filter((e) => e.object?.id === id).at(-1)!.object;
    await eventually(async () => expect(withoutUptime(latest())).toEqual(withoutUptime(await listed(id))));

    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status).toBe(200);
    const pid = started.body.data.pid;
    const running = await stream.next((e) => e.type === 'MODIFIED' && e.object.id === id && e.object.status === 'running');
    expect(running.object).toMatchObject({ pid, phase: 'Running' });
    expect(Date.parse(running.object.start_time)).toBeGreaterThan(0);

    // CPU and memory reach watchers with the next samples (every 0.5 s here), not only with the
    // next reconcile (the resync, every 5 s).
    const sampled = await stream.next((e) => e.type === 'MODIFIED' && e.object.id === id && e.object.memory_mb > 0, stream.events.indexOf(running), 10_000);
    expect(sampled.object.pid).toBe(pid);
    await eventually(async () => expect(withoutUptime(latest())).toEqual(withoutUptime(await listed(id))));

    // A crash behind the service's back: the stream says so (how fast is `npm run bench -- dashboard`'s figure).
    const beforeKill = stream.events.length;
    process.kill(pid, 'SIGKILL');
    const crashed = await stream.next((e) => e.object?.id === id && e.object.status === 'failed', beforeKill, 10_000);
    expect(crashed.type).toBe('MODIFIED');
    expect(crashed.object).toMatchObject({ pid: null, phase: 'Failed', reason: 'Crashed' });
    expect(crashed.object.message).toContain('SIGKILL');

    // An operator edits the manifest's spec by hand.
    const file = manifestFile(crashed.object);
    const manifest = parse(await fs.readFile(file, 'utf8'));
    manifest.spec.displayName = 'Edited by hand';
    const beforeEdit = stream.events.length;
    await fs.writeFile(file, stringify(manifest));
    const edited = await stream.next((e) => e.object?.id === id && e.object.name === 'Edited by hand', beforeEdit, 10_000);
    expect(edited.type).toBe('MODIFIED');
    expect(edited.object.generation).toBeGreaterThan(crashed.object.generation);
    await eventually(async () => expect(withoutUptime(latest())).toEqual(withoutUptime(await listed(id))));

    const last = latest();
    const deleted = await service.request('DELETE', `/servers/${id}`);
    expect(deleted.status).toBe(200);
    const gone = await stream.next((e) => e.type === 'DELETED' && e.object.id === id);
    expect(gone.object).toEqual(last);
    expect(await listed(id)).toBeUndefined();

    // Ids count up one by one; MODIFIED only when the record changed (uptime aside).
    expect(stream.events.map((e) => e.id)).toEqual(stream.events.map((_e, i) => i + 1));
    // (DELETED carries the last record again, so it is left out.)
    const mine = stream.events.filter((e) => e.object?.id === id && e.type !== 'DELETED');
    for (let i = 1; i < mine.length; i++) expect(withoutUptime(mine[i].object)).not.toEqual(withoutUptime(mine[i - 1].object));
    expect(stream.problems).toEqual([]);
  });

  it('answers the plain list for watch=0 and refuses any other watch value with 400 saying to use watch=1', async () => {
    const plain = await service.request('GET', '/servers?watch=0');
    expect(plain.status).toBe(200);
    expect(Array.isArray(plain.body)).toBe(true);
    for (const query of ['watch=yes', 'watch=true', 'watch=', 'watch=1&watch=1']) {
      const res = await service.request('GET', `/servers?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.status).toBe('error');
      expect(res.body.error.code).toBe('INVALID_QUERY');
      expect(res.body.error.message).toContain('watch=1');
    }
  });

  it('drops a client that stops reading, while the other streams go on', async () => {
    const created = await service.request('POST', '/servers', { name: 'Churn' });
    const id = created.body.id;
    const reader = await watch();
    await reader.next((e) => e.type === 'SYNCED');
    const watchers = async () => (await service.request('GET', '/health')).body.watch;
    const open = (await watchers()).watchers;

    // A client that sends the request, then never reads a byte.
    const slow = connect(service.port, '127.0.0.1');
    slow.on('error', () => undefined);
    let slowClosed = false;
    slow.on('close', () => (slowClosed = true));
    slow.write(`GET /servers?watch=1 HTTP/1.1\r\nHost: 127.0.0.1:${service.port}\r\n\r\n`);
    slow.pause();
    await eventually(async () => (await watchers()).watchers === open + 1);

    // Big records churn: an invalid manifest lists every problem in manifest_errors (about
    // 400 KiB of them here), and each edit changes them. The kernel holds some MB first.
    const file = manifestFile(await listed(id));
    const valid = await fs.readFile(file, 'utf8');
    const dropped = () => service.lines.some((line) => line.includes('watch stream of') && line.includes('dropped'));
    for (let n = 1500; !dropped(); n++) {
      expect(n, 'the slow client was never dropped').toBeLessThan(1540);
      const manifest = parse(valid);
      manifest.spec.extensions = Array.from({ length: n }, () => '!not-an-extension');
      const from = reader.events.length;
      await fs.writeFile(file, stringify(manifest));
      // One problem per item (the pattern), and one for the duplicates.
      await reader.next((e) => e.object?.id === id && e.object.manifest_errors?.length === n + 1, from);
    }
    expect(await watchers()).toMatchObject({ watchers: open, dropped_slow: 1 });
    // Once it reads again, it finds the stream closed by the service.
    slow.resume();
    await eventually(() => slowClosed);

    // The reading stream still gets what follows: the file fixed.
    const from = reader.events.length;
    await fs.writeFile(file, valid);
    const fixed = await reader.next((e) => e.object?.id === id && e.type === 'MODIFIED' && e.object.manifest_errors === undefined, from);
    expect(fixed.object.name).toBe('Churn');
    expect(reader.ended).toBe(false);
    expect(reader.problems).toEqual([]);
  }, 60_000);
});

describe('watch streams under access: owner', () => {
  const ALICE = { 'X-Forwarded-Email': 'alice@example.com' };
  const BOB = { 'X-Forwarded-Email': 'bob@example.com' };
  let owned: TestService;

  beforeAll(async () => {
    owned = await startTestService({ requireIdentity: true, config: { access: 'owner', admins: [] } });
  });
  afterAll(async () => {
    await owned?.stop();
  });

  it("shows each user only their own servers' events", async () => {
    const alicesFirst = await owned.request('POST', '/servers', { name: 'Alice one' }, ALICE);
    const bobsFirst = await owned.request('POST', '/servers', { name: 'Bob one' }, BOB);
    expect([alicesFirst.status, bobsFirst.status]).toEqual([201, 201]);
    const alice = await watch(ALICE, owned);
    const bob = await watch(BOB, owned);
    const ids = (stream: WatchStream, type: WatchEvent['type']) => stream.events.filter((e) => e.type === type).map((e) => e.object.id);
    await alice.next((e) => e.type === 'SYNCED');
    await bob.next((e) => e.type === 'SYNCED');
    expect(ids(alice, 'ADDED')).toEqual([alicesFirst.body.id]);
    expect(ids(bob, 'ADDED')).toEqual([bobsFirst.body.id]);
    expect(withoutUptime(alice.events[0].object)).toEqual(withoutUptime(await listed(alicesFirst.body.id, ALICE, owned)));

    // Bob's new server and its start, then one of Alice's: events reach a stream in order, so
    // once Alice's arrives, anything of Bob's would have arrived before it.
    const bobsSecond = await owned.request('POST', '/servers', { name: 'Bob two' }, BOB);
    expect((await owned.request('POST', `/servers/${bobsSecond.body.id}/start`, undefined, BOB)).status).toBe(200);
    await bob.next((e) => e.object?.id === bobsSecond.body.id && e.object.status === 'running');
    const alicesSecond = await owned.request('POST', '/servers', { name: 'Alice two' }, ALICE);
    await alice.next((e) => e.type === 'ADDED' && e.object.id === alicesSecond.body.id);
    expect(await owned.request('DELETE', `/servers/${bobsFirst.body.id}`, undefined, BOB)).toMatchObject({ status: 200 });
    await bob.next((e) => e.type === 'DELETED' && e.object.id === bobsFirst.body.id);
    const alicesDelete = await owned.request('DELETE', `/servers/${alicesFirst.body.id}`, undefined, ALICE);
    expect(alicesDelete.status).toBe(200);
    await alice.next((e) => e.type === 'DELETED' && e.object.id === alicesFirst.body.id);

    const seenBy = (stream: WatchStream) => new Set(stream.events.flatMap((e) => (e.object ? [e.object.owner] : [])));
    expect(seenBy(alice)).toEqual(new Set(['alice@example.com']));
    expect(seenBy(bob)).toEqual(new Set(['bob@example.com']));
    expect(ids(bob, 'ADDED')).toEqual([bobsFirst.body.id, bobsSecond.body.id]);
  });

  it('refuses a watch without the identity headers when deployed', async () => {
    const res = await owned.request('GET', '/servers?watch=1');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHENTICATED');
  });
});

describe('closing the service', () => {
  it('ends every watch stream', async () => {
    const closing = await startTestService();
    try {
      const stream = await watch({}, closing);
      await stream.next((e) => e.type === 'SYNCED');
      expect(stream.ended).toBe(false);
      await closing.close({ stopEditors: true });
      await eventually(() => stream.ended);
    } finally {
      await closing.stop();
    }
  });
});
