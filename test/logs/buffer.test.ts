import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogHub } from '../../src/logs/hub.ts';
import { OTHER, SERVER, makeHub, makeLogsDir } from './fixtures.ts';

describe('the in-memory history', () => {
  let logsDir: string;
  let hub: LogHub;

  beforeEach(() => {
    logsDir = makeLogsDir();
  });

  afterEach(async () => {
    await hub.close();
    fs.rmSync(logsDir, { recursive: true, force: true });
  });

  it('is bounded in bytes per server, keeping the newest entries', () => {
    hub = makeHub(logsDir, { maxBufferBytes: 10_000 });
    hub.track(SERVER);
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

  it('returns the newest lines last, and merges all servers by time for a null name', async () => {
    hub = makeHub(logsDir);
    hub.track(SERVER);
    hub.track(OTHER);
    hub.event(SERVER.name, 'INFO', 'a1');
    await new Promise((resolve) => setTimeout(resolve, 5));
    hub.event(OTHER.name, 'INFO', 'b1');
    await new Promise((resolve) => setTimeout(resolve, 5));
    hub.event(SERVER.name, 'INFO', 'a2');

    expect(hub.tail(SERVER.name, 1).map((entry) => entry.message)).toEqual(['a2']);
    expect(hub.tail(null, 10).map((entry) => entry.message)).toEqual(['a1', 'b1', 'a2']);
    expect(hub.tail(null, 2).map((entry) => `${entry.serverName}: ${entry.message}`)).toEqual([
      'Notebook: b1',
      'Data pipeline: a2',
    ]);
    expect(hub.tail(null, 0)).toEqual([]);
  });
});
