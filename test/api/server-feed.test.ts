// The ServerFeed behind the watch stream, with a stand-in index and a real StatsSampler fed
// fake usage: a record is serialised once per change, a stats sample that moves CPU or memory is
// a change, one that moves only uptime is not, and a record gone is reported with its last state;
// its list (GET /servers) is the bytes of JSON.stringify over serverView, also for a record changed
// without an event yet.
import { describe, expect, it, vi } from 'vitest';
import { ServerFeed, type FeedChange } from '../../src/api/server-feed.ts';
import { API_VERSION, KIND, type EditorServer } from '../../src/manifests/types.ts';
import { serverView } from '../../src/api/views.ts';
import { StatsSampler } from '../../src/runtime/stats.ts';
import type { EditorUsage } from '../../src/runtime/usage.ts';
import { fakeIndex, reconciled } from '../helpers/fake-index.ts';
import { CountedRecords } from '../../src/index/server-table.ts';
import type { ServerRecord } from '../../src/index/records.ts';
import type { IndexEvents } from '../../src/index/server-index.ts';
import { TypedEvents } from '../../src/index/typed-events.ts';

function setUp() {
  const index = fakeIndex();
  const handle = { kind: 'process', pid: 4242, startTicks: 1 };
  let usage: EditorUsage = { cpuPercent: 1, memoryMb: 100, uptime: 1 };
  const stats = new StatsSampler(() => new Map([['alpha', handle]]), async () => new Map([[handle, usage]]), 60_000);
  const feed = new ServerFeed(index, stats);
  const changes: FeedChange[] = [];
  feed.subscribe((change) => changes.push(change));
  const server: EditorServer = {
    apiVersion: API_VERSION, kind: KIND,
    metadata: { name: 'alpha', uid: '5f0c0000-0000-4000-8000-000000000001' },
    spec: { displayName: 'Alpha', running: true },
    status: { phase: 'Running', runtimeRef: handle, port: 8010, startTime: new Date(Date.now() - 5000).toISOString() },
  };
  index.records.set('alpha', { name: 'alpha', server });
  return { index, stats, feed, changes, server, setUsage: (next: EditorUsage) => (usage = next) };
}

describe('ServerFeed', () => {
  it('sends a record once per change, and a stats sample that moves memory or CPU as a change', async () => {
    const { index, stats, feed, changes, server, setUsage } = setUp();
    index.emit('changed', 'alpha');
    expect(changes).toHaveLength(1);
    expect(changes[0].before).toBeUndefined();
    expect(JSON.parse(changes[0].after!.json)).toMatchObject({ id: server.metadata.uid, status: 'running', pid: 4242, memory_mb: 0 });

    // The same facts again (a resync, a status rewritten unchanged): nothing is sent.
    index.emit('reconciled', reconciled('alpha', 2));
    index.emit('changed', 'alpha');
    expect(changes).toHaveLength(1);

    await stats.sample();
    expect(changes).toHaveLength(2);
    expect(JSON.parse(changes[1].after!.json)).toMatchObject({ cpu_percent: 1, memory_mb: 100 });
    expect(changes[1].before).toBe(changes[0].after);

    // Only uptime moved: no change.
    setUsage({ cpuPercent: 1, memoryMb: 100, uptime: 99 });
    await stats.sample();
    expect(changes).toHaveLength(2);

    // Nor is the record built again for it: the entry listed is the very one.
    const kept = feed.entryOf('alpha');
    setUsage({ cpuPercent: 1, memoryMb: 100, uptime: 101 });
    await stats.sample();
    expect(feed.entryOf('alpha')).toBe(kept);

    setUsage({ cpuPercent: 7.5, memoryMb: 100, uptime: 100 });
    await stats.sample();
    expect(changes).toHaveLength(3);
    expect(JSON.parse(changes[2].after!.json).cpu_percent).toBe(7.5);
  });

  it('brings a record to its last sample when it is read, while nobody follows the feed', async () => {
    const index = fakeIndex();
    const handle = { kind: 'process', pid: 4242, startTicks: 1 };
    let usage: EditorUsage = { cpuPercent: 1, memoryMb: 100, uptime: 1 };
    const stats = new StatsSampler(() => new Map([['alpha', handle]]), async () => new Map([[handle, usage]]), 60_000);
    const feed = new ServerFeed(index, stats);
    index.records.set('alpha', { name: 'alpha', server: {
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'alpha', uid: '5f0c0000-0000-4000-8000-000000000001' },
      spec: { running: true },
      status: { phase: 'Running', runtimeRef: handle, port: 8010, startTime: new Date().toISOString() },
    } });
    await stats.sample();
    expect(JSON.parse(feed.list())[0]).toMatchObject({ cpu_percent: 1, memory_mb: 100 });
    usage = { cpuPercent: 2, memoryMb: 120, uptime: 3 };
    await stats.sample();
    expect(JSON.parse(feed.listBytes(undefined, Buffer.allocUnsafe).toString())[0]).toMatchObject({ cpu_percent: 2, memory_mb: 120 });
    // Followed from now on: the next sample is told as it comes.
    const changes: FeedChange[] = [];
    feed.subscribe((change) => changes.push(change));
    usage = { cpuPercent: 3, memoryMb: 130, uptime: 5 };
    await stats.sample();
    expect(changes.map((change) => JSON.parse(change.after!.json).memory_mb)).toEqual([130]);
  });

  it('reports a record that went with its last state, and lists only records with a uid', () => {
    const { index, feed, changes } = setUp();
    index.records.set('never-valid', { name: 'never-valid', problems: ['spec: required'] });
    expect(feed.snapshot().map((e) => e.name)).toEqual(['alpha']);
    const last = changes.at(-1)!.after!;
    index.records.delete('alpha');
    index.emit('deleted', 'alpha');
    expect(changes.at(-1)).toEqual({ name: 'alpha', before: last });
    expect(feed.snapshot()).toEqual([]);
  });

  it('stops listening once disposed', async () => {
    const { index, stats, feed, changes } = setUp();
    feed.dispose();
    index.emit('changed', 'alpha');
    await stats.sample();
    expect(changes).toEqual([]);
    expect(index.listenerCount('changed')).toBe(0);
  });

  it('lists the bytes JSON.stringify of serverView gives, uptime spliced in, and serves a record changed without an event fresh', async () => {
    const { index, stats, feed, server } = setUp();
    const uptimeless = (json: string) => json.replace(/"uptime":[0-9.e+-]+/g, '"uptime":_');
    const viewOf = (name: string) => {
      const record = index.records.get(name)!;
      return serverView(record, record.server!.status?.runtimeRef ? stats.get(name) : undefined);
    };
    const listed = () => [...index.records.keys()].filter((n) => index.records.get(n)!.server?.metadata.uid).map(viewOf);
    const stopped: EditorServer = {
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'beta', uid: '5f0c0000-0000-4000-8000-000000000002', annotations: { 'devbox.dev/owner': 'bob@example.com' } },
      spec: { displayName: 'Bêta "quoted" \u2028 \\ box', running: false, extensions: ['a.b'] },
      status: { phase: 'Stopped', port: 8011 },
    };
    index.records.set('beta', { name: 'beta', server: stopped });
    index.records.set('stray', { name: 'stray', problems: ['kind: wrong'] });
    await stats.sample();
    expect(uptimeless(feed.list())).toBe(uptimeless(JSON.stringify(listed())));
    const uptime = JSON.parse(feed.list())[0].uptime;
    expect(Math.abs(uptime - viewOf('alpha').uptime)).toBeLessThan(0.5);
    expect(uptime).toBeGreaterThan(4);
    // Not running: uptime 0, the very bytes.
    expect(feed.list((s) => s.metadata.name === 'beta')).toBe(JSON.stringify([viewOf('beta')]));
    expect(ServerFeed.current(feed.entryOf('beta')!)).toBe(JSON.stringify(viewOf('beta')));
    expect(feed.entryOf('stray')).toBeUndefined();

    // Changed with no event yet: a new manifest read, a status replaced, problems, a stats sample.
    index.records.get('beta')!.server = { ...stopped, spec: { ...stopped.spec, displayName: 'Beta renamed' } };
    expect(JSON.parse(feed.list())[1].name).toBe('Beta renamed');
    server.status = { ...server.status!, phase: 'Failed', runtimeRef: null, reason: 'Crashed' };
    expect(feed.list()).toBe(JSON.stringify(listed()));
    index.records.get('beta')!.problems = ['spec.port: must be a number'];
    expect(JSON.parse(ServerFeed.current(feed.entryOf('beta')!)).manifest_errors).toEqual(['spec.port: must be a number']);
    expect(feed.list()).toBe(JSON.stringify(listed()));
    index.records.delete('alpha');
    expect(feed.list()).toBe(JSON.stringify(listed()));
    expect(feed.snapshot().map((e) => e.name)).toEqual(['beta']);
  });

  it('lists as bytes what list() gives, at each moment, kept between answers and never stale', async () => {
    const { index, stats, feed, server, setUsage } = setUp();
    const stopped: EditorServer = {
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'beta', uid: '5f0c0000-0000-4000-8000-000000000002' },
      spec: { displayName: 'Bêta \u2028', running: false },
      status: { phase: 'Stopped', port: 8011 },
    };
    index.records.set('beta', { name: 'beta', server: stopped });
    await stats.sample();
    const bytes = () => feed.listBytes(undefined, (n) => Buffer.alloc(n)).toString();
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now');
    try {
      for (const at of [now, now + 1, now + 1000, now + 61_234]) {
        clock.mockReturnValue(at);
        expect(bytes()).toBe(feed.list());
        expect(bytes()).toBe(feed.list());
      }
      // Changed with no event yet: a status replaced, a manifest read anew, a sample, a record gone.
      server.status = { ...server.status!, startTime: new Date(now - 99_999).toISOString() };
      expect(bytes()).toBe(feed.list());
      expect(JSON.parse(bytes())[0].uptime).toBe(161.233);
      index.records.get('beta')!.server = { ...stopped, spec: { ...stopped.spec, displayName: 'Beta renamed' } };
      expect(JSON.parse(bytes())[1].name).toBe('Beta renamed');
      setUsage({ cpuPercent: 42, memoryMb: 100, uptime: 3 });
      await stats.sample();
      expect(JSON.parse(bytes())[0].cpu_percent).toBe(42);
      index.records.get('beta')!.problems = ['spec.port: must be a number'];
      expect(JSON.parse(bytes())[1].manifest_errors).toEqual(['spec.port: must be a number']);
      // A record that is not listed (no uid) comes and goes; a listed one loses its uid; a record object is replaced.
      index.records.set('stray', { name: 'stray', problems: ['kind: wrong'] });
      expect(bytes()).toBe(feed.list());
      expect(bytes()).toBe(feed.list());
      const beta = index.records.get('beta')!;
      beta.server = { ...beta.server!, metadata: { name: 'beta' } };
      expect(JSON.parse(bytes())).toHaveLength(1);
      beta.server = { ...beta.server!, metadata: stopped.metadata };
      expect(JSON.parse(bytes())).toHaveLength(2);
      // The same manifest object, its uid taken out of it.
      const metadata = { ...stopped.metadata };
      beta.server = { ...beta.server!, metadata };
      expect(JSON.parse(bytes())).toHaveLength(2);
      delete metadata.uid;
      expect(JSON.parse(bytes())).toHaveLength(1);
      beta.server = { ...beta.server!, metadata: stopped.metadata };
      expect(JSON.parse(bytes())).toHaveLength(2);
      index.records.set('beta', { ...beta, problems: undefined });
      expect(bytes()).toBe(feed.list());
      expect(JSON.parse(bytes())[1].manifest_errors).toBeUndefined();
      index.records.delete('stray');
      index.records.delete('alpha');
      expect(bytes()).toBe(feed.list());
      expect(JSON.parse(bytes()).map((r: { id: string }) => r.id)).toEqual([stopped.metadata.uid]);
      // Filtered: the same bytes as list() with the same filter.
      const onlyBeta = (s: EditorServer) => s.metadata.name === 'beta';
      expect(feed.listBytes(onlyBeta, (n) => Buffer.alloc(n)).toString()).toBe(feed.list(onlyBeta));
    } finally {
      clock.mockRestore();
    }
  });

  it('lists a persistence state that changed, with or without its news', async () => {
    const index = fakeIndex();
    const stats = new StatsSampler(() => new Map(), async () => new Map(), 60_000);
    let state: object = { last_snapshot_at: null };
    const persistence = { stateOf: () => state, onChange: () => () => undefined };
    const feed = new ServerFeed(index, stats, persistence);
    const server: EditorServer = {
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'alpha', uid: '5f0c0000-0000-4000-8000-000000000001' },
      spec: { displayName: 'Alpha', running: false },
    };
    index.records.set('alpha', { name: 'alpha', server });
    const listed = () => JSON.parse(feed.listBytes(undefined, (n) => Buffer.alloc(n)).toString());
    expect(listed()[0].persistence).toEqual({ last_snapshot_at: null });
    expect(listed()[0].persistence).toEqual({ last_snapshot_at: null });
    state = { last_snapshot_at: '2026-01-01T00:00:00.000Z' };
    expect(listed()[0].persistence).toEqual(state);
    await stats.sample();
    expect(listed()[0].persistence).toEqual(state);
  });

  it('lists the kept whole list without looking at a record while the index counts no change to one, and looks again after a change', async () => {
    const records = new CountedRecords();
    const index = Object.assign(new TypedEvents<IndexEvents>(), { records, recordChanges: () => records.changes });
    const stats = new StatsSampler(() => new Map(), async () => new Map(), 60_000);
    const feed = new ServerFeed(index, stats);
    const server = (name: string, displayName: string): EditorServer => ({
      apiVersion: API_VERSION, kind: KIND, metadata: { name, uid: `5f0c0000-0000-4000-8000-00000000000${name.length}` },
      spec: { displayName, running: false }, status: { phase: 'Stopped', port: 8010 + name.length },
    });
    // Every read of a record's fields is counted.
    let reads = 0;
    const counted = (record: ServerRecord) => new Proxy(record, { get: (target, key) => (reads++, Reflect.get(target, key)) });
    records.set('alpha', counted({ name: 'alpha', server: server('alpha', 'Alpha') }));
    records.set('beta', counted({ name: 'beta', server: server('beta', 'Beta') }));
    const bytes = () => feed.listBytes(undefined, (n) => Buffer.alloc(n)).toString();
    expect(bytes()).toBe(feed.list());
    bytes(); // kept, and checked once against the records
    reads = 0;
    expect(bytes()).toBe(feed.list());
    reads = 0;
    bytes();
    expect(reads).toBe(0);
    // A manifest read replaces beta's server, with no event yet: the count moved, so it is listed at once.
    records.set('beta', counted({ name: 'beta', server: server('beta', 'Beta renamed') }));
    expect(JSON.parse(bytes())[1].name).toBe('Beta renamed');
    expect(bytes()).toBe(feed.list());
    feed.dispose();
  });
});
