import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { OTHER, SERVER, useHubs, trackRunning } from './fixtures.ts';

describe('the in-memory history', () => {
  const hubs = useHubs();

  it('is bounded in bytes per server, keeping the newest entries', () => {
    const hub = hubs.open({ maxBufferBytes: 10_000 });
    trackRunning(hub, SERVER);
    for (let i = 0; i < 100; i++) hub.event(SERVER.name, 'INFO', `${i} ${'z'.repeat(1000)}`);
    const kept = hub.tail(SERVER.name, 1000);
    // 1 KB messages in a 10 KB budget: under ten of them, however many lines were asked for.
    expect(kept.length).toBeGreaterThan(5);
    expect(kept.length).toBeLessThan(10);
    expect(kept.map((entry) => Number(entry.message.split(' ')[0]))).toEqual(
      Array.from({ length: kept.length }, (_, i) => 100 - kept.length + i),
    );
    // Short lines are bounded by the same budget, not by a line count.
    for (let i = 0; i < 1000; i++) hub.event(SERVER.name, 'INFO', `short ${i}`);
    expect(hub.tail(SERVER.name, 1000).length).toBeLessThan(100);
  });

  it('returns the newest lines last, and merges all servers by time for a null name', () => {
    const hub = hubs.open();
    trackRunning(hub, SERVER);
    trackRunning(hub, OTHER);
    // Entries are stamped with new Date(): the clock is moved 5 ms between them, so each has its own time.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(new Date('2026-11-22T06:00:00.000Z'));
      hub.event(SERVER.name, 'INFO', 'a1');
      vi.setSystemTime(Date.now() + 5);
      hub.event(OTHER.name, 'INFO', 'b1');
      vi.setSystemTime(Date.now() + 5);
      hub.event(SERVER.name, 'INFO', 'a2');
    } finally {
      vi.useRealTimers();
    }

    expect(hub.tail(SERVER.name, 1).map((entry) => entry.message)).toEqual(['a2']);
    expect(hub.tail(null, 10).map((entry) => entry.message)).toEqual(['a1', 'b1', 'a2']);
    expect(hub.tail(null, 2).map((entry) => `${entry.serverName}: ${entry.message}`)).toEqual([
      'Notebook: b1',
      'Data pipeline: a2',
    ]);
    expect(hub.tail(null, 0)).toEqual([]);
  });

  it('does not keep alive the manifest text an id or name was sliced from', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const hub = hubs.open();
    // A 30 MB "manifest": the strings parsed out of it are slices that point into its text.
    let text: string | undefined = `${'#'.repeat(30 * 1024 * 1024)}\n${SERVER.id} ${SERVER.displayName}`;
    const at = text.length - SERVER.id.length - SERVER.displayName.length - 1;
    const sliced = { name: SERVER.name, id: text.slice(at, at + SERVER.id.length), displayName: text.slice(at + SERVER.id.length + 1) };
    expect(sliced).toEqual(SERVER);
    gc();
    const before = process.memoryUsage().heapUsed;
    trackRunning(hub, sliced);
    trackRunning(hub, { ...sliced }); // a reconcile re-tracks with strings from the next read
    for (let i = 0; i < 100; i++) hub.event(SERVER.name, 'INFO', `event ${i}`);
    text = undefined;
    sliced.id = sliced.displayName = '';
    gc();
    expect(hub.tail(SERVER.name, 100).map((entry) => entry.serverId)).toEqual(Array(100).fill(SERVER.id));
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(-20 * 1024 * 1024);
  });
});
