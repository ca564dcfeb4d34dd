// The list-then-watch loop against a fake API server that keeps objects with versions, an event
// history it compacts, and watches a test can end, break or answer 410; time moves by a fake clock.
import { afterEach, describe, expect, it } from 'vitest';
import { ListWatch, WatchFailure, type ListResult, type ListWatchTransport, type WatchEvent } from '../../../src/runtime/kubernetes/list-watch.ts';
import { FakeClock } from '../../helpers/fakes.ts';
import { eventually } from '../../helpers/wait.ts';

interface Obj {
  metadata: { name: string; resourceVersion: string };
  data: string;
}

interface OpenWatch {
  from: string;
  send(event: WatchEvent<Obj>): void;
  end(): void;
  fail(error: Error): void;
}

class FakeApi implements ListWatchTransport<Obj> {
  version = 1;
  readonly objects = new Map<string, Obj>();
  /** Every change, oldest first; versions at or below `compactedTo` are gone (410). */
  readonly history: Array<{ version: number; event: WatchEvent<Obj> }> = [];
  compactedTo = 0;
  readonly watches: OpenWatch[] = [];
  /** Set to make the next list or watch call fail this way. */
  nextFailure: Error | undefined;

  write(name: string, data: string): void {
    const object = { metadata: { name, resourceVersion: String(++this.version) }, data };
    const type = this.objects.has(name) ? 'MODIFIED' : 'ADDED';
    this.objects.set(name, object);
    this.emit({ type, object });
  }

  delete(name: string): void {
    const object = { ...this.objects.get(name)!, metadata: { name, resourceVersion: String(++this.version) } };
    this.objects.delete(name);
    this.emit({ type: 'DELETED', object });
  }

  bookmark(): void {
    const event = { type: 'BOOKMARK' as const, object: { metadata: { resourceVersion: String(++this.version) } } };
    for (const watch of this.live()) watch.send(event);
  }

  live(): OpenWatch[] {
    return this.watches.filter((w) => !(w as { done?: boolean }).done);
  }

  async list(): Promise<ListResult<Obj>> {
    this.throwIfFailing();
    return { items: [...this.objects.values()].map((o) => structuredClone(o)), resourceVersion: String(this.version) };
  }

  watch(resourceVersion: string, onEvent: (event: WatchEvent<Obj>) => void, signal: AbortSignal): Promise<void> {
    this.throwIfFailing();
    if (Number(resourceVersion) < this.compactedTo) return Promise.reject(new WatchFailure('too old resource version', 410));
    return new Promise((resolve, reject) => {
      const watch: OpenWatch & { done?: boolean } = {
        from: resourceVersion,
        send: (event) => !watch.done && onEvent(structuredClone(event)),
        end: () => finish(() => resolve()),
        fail: (error) => finish(() => reject(error)),
      };
      const finish = (how: () => void) => {
        if (watch.done) return;
        watch.done = true;
        how();
      };
      signal.addEventListener('abort', () => watch.end(), { once: true });
      this.watches.push(watch);
      for (const { version, event } of this.history) if (version > Number(resourceVersion)) watch.send(event);
    });
  }

  private emit(event: WatchEvent<Obj>): void {
    this.history.push({ version: this.version, event });
    for (const watch of this.live()) watch.send(event);
  }

  private throwIfFailing(): void {
    const failure = this.nextFailure;
    this.nextFailure = undefined;
    if (failure) throw failure;
  }
}

let loop: ListWatch<Obj> | undefined;
afterEach(async () => {
  await loop?.close();
  loop = undefined;
});

function start(api: FakeApi, clock: FakeClock, relistMs = 60_000) {
  const cache = new Map<string, string>();
  const troubles: Array<{ message: string; delayMs: number }> = [];
  loop = new ListWatch<Obj>(api, {
    replace: (items) => {
      cache.clear();
      for (const item of items) cache.set(item.metadata.name, item.data);
    },
    upsert: (item) => cache.set(item.metadata.name, item.data),
    remove: (item) => cache.delete(item.metadata.name),
    trouble: (error, delayMs) => troubles.push({ message: error.message, delayMs }),
  }, { clock, relistMs, backoff: { initialMs: 1000, maxMs: 8000 } });
  loop.start();
  return { cache, troubles, loop };
}

describe('the list-then-watch loop', () => {
  it('lists, then follows every change from the list\'s version, bookmarks moving it on', async () => {
    const api = new FakeApi();
    api.write('a', 'one');
    const { cache, loop } = start(api, new FakeClock());
    await loop.synced();
    expect(cache).toEqual(new Map([['a', 'one']]));
    await eventually(() => api.live().length === 1);
    expect(api.live()[0].from).toBe(String(api.version));

    api.write('b', 'two');
    api.write('a', 'three');
    api.delete('b');
    expect(cache).toEqual(new Map([['a', 'three']]));
    api.bookmark();
    expect(loop.resourceVersion).toBe(String(api.version));
    expect(loop.counts).toEqual({ lists: 1, watches: 1 });
  });

  it('opens the watch again from the last version when the server ends it, missing nothing written in between', async () => {
    const api = new FakeApi();
    const { cache, loop } = start(api, new FakeClock());
    await loop.synced();
    await eventually(() => api.live().length === 1);
    api.write('a', 'one');
    const at = loop.resourceVersion;
    api.live()[0].end();
    api.write('b', 'two'); // while no watch is open
    await eventually(() => api.live().length === 1 && cache.get('b') === 'two');
    expect(api.watches.at(-1)!.from).toBe(at);
    expect(loop.counts.lists).toBe(1);
  });

  it('lists again at once on 410, at connect and as an ERROR event mid-stream, without a backoff', async () => {
    const api = new FakeApi();
    const { cache, troubles, loop } = start(api, new FakeClock());
    await loop.synced();
    await eventually(() => api.live().length === 1);
    // Mid-stream: the server says the version is gone.
    api.live()[0].send({ type: 'ERROR', object: { code: 410, reason: 'Expired', message: 'too old resource version' } });
    await eventually(() => loop.counts.lists === 2 && api.live().length === 1);
    // At connect: the history was compacted past the version the next watch asks for.
    api.write('a', 'one');
    api.live()[0].end();
    api.write('b', 'two');
    api.compactedTo = api.version;
    await eventually(() => loop.counts.lists === 3 && api.live().length === 1);
    expect(cache).toEqual(new Map([['a', 'one'], ['b', 'two']]));
    expect(troubles).toEqual([]);
  });

  it('waits instead of spinning when 410 follows 410 (even a fresh list\'s version refused)', async () => {
    const api = new FakeApi();
    const clock = new FakeClock();
    api.compactedTo = 1_000_000; // a broken server: every watch is "too old"
    const { troubles, loop } = start(api, clock);
    await loop.synced();
    await eventually(() => troubles.length === 1);
    // One list again at once, as for any 410; the second 410 in a row waits.
    expect(troubles[0].delayMs).toBe(1000);
    expect(loop.counts).toEqual({ lists: 2, watches: 2 });
    api.compactedTo = 0;
    clock.advance(1000);
    await eventually(() => api.live().length === 1);
    expect(loop.counts).toEqual({ lists: 3, watches: 3 });
  });

  it('survives any other failure (a killed API server): waits with a growing backoff, lists again, and has every change', async () => {
    const api = new FakeApi();
    const clock = new FakeClock();
    const { cache, troubles, loop } = start(api, clock);
    await loop.synced();
    await eventually(() => api.live().length === 1);
    api.live()[0].fail(new TypeError('terminated'));
    api.write('a', 'written while the server was away');
    await eventually(() => troubles.length === 1);
    expect(troubles[0]).toEqual({ message: 'terminated', delayMs: 1000 });
    // It fails again as it comes back: the wait doubles.
    api.nextFailure = new Error('connect ECONNREFUSED');
    clock.advance(1000);
    await eventually(() => troubles.length === 2);
    expect(troubles[1]).toEqual({ message: 'connect ECONNREFUSED', delayMs: 2000 });
    expect(cache.has('a')).toBe(false);
    clock.advance(2000);
    await eventually(() => cache.get('a') === 'written while the server was away' && api.live().length === 1);
    expect(loop.counts.lists).toBe(3); // the first, the refused one, the one after the wait
    // Once well again, the next failure starts from the first wait.
    api.live()[0].fail(new TypeError('terminated'));
    await eventually(() => troubles.length === 3);
    expect(troubles[2].delayMs).toBe(1000);
  });

  it('lists again on its timer even when nothing failed, so a missed event cannot last', async () => {
    const api = new FakeApi();
    const clock = new FakeClock();
    const { cache, loop } = start(api, clock, 30_000);
    await loop.synced();
    await eventually(() => api.live().length === 1);
    // A change the watch never delivers (as if an event were lost).
    api.objects.set('ghost', { metadata: { name: 'ghost', resourceVersion: String(++api.version) }, data: 'missed' });
    expect(cache.has('ghost')).toBe(false);
    clock.advance(30_000);
    await eventually(() => cache.get('ghost') === 'missed');
    expect(loop.counts.lists).toBe(2);
  });

  it('stops for good when closed: no list, no watch, no timer after', async () => {
    const api = new FakeApi();
    const clock = new FakeClock();
    const { loop } = start(api, clock);
    await loop.synced();
    await eventually(() => api.live().length === 1);
    await loop.close();
    expect(api.live()).toEqual([]);
    const counts = { ...loop.counts };
    clock.advance(10 * 60_000);
    expect(loop.counts).toEqual(counts);
    expect(clock.pendingDelays).toEqual([]);
  });
});
