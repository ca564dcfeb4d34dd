import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LogEntry } from '../../src/logs/entry.ts';
import { opened } from '../helpers/net.ts';
import { FakeEditorOutput, SERVER, useHubs, useLogStreams, waitFor, trackRunning } from './fixtures.ts';

/** A clock the test moves by hand: the hub's entry times and its rate limit follow it, nothing else. */
function manualClock(start = Date.parse('2026-11-22T06:00:00.000Z')): { now: () => number; advance: (ms: number) => void } {
  let at = start;
  return { now: () => at, advance: (ms) => (at += ms) };
}

const line = (i: number) => `GET /static/${i}.js 200 0.4ms seq=${i}`;
const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => line(from + i));
const block = (from: number, to: number) => lines(from, to).map((text) => `${text}\n`).join('');
const isMarker = (entry: LogEntry) => / dropped \(rate limit /.test(entry.message);
/** server.log and its rotated files, oldest first, each line without its time, level and source. */
function serverLogMessages(dir: string): string[] {
  const rotated = fs.readdirSync(dir).filter((file) => /^server\.log\.\d+$/.test(file)).sort((a, b) => Number(b.split('.')[2]) - Number(a.split('.')[2]));
  return [...rotated, 'server.log']
    .flatMap((file) => fs.readFileSync(path.join(dir, file), 'utf8').split('\n'))
    .filter((text) => text !== '')
    .map((text) => text.replace(/^\S+ \[\w+\] \[\w+\] /, ''));
}

describe('a noisy editor', () => {
  const hubs = useHubs();
  const editors: FakeEditorOutput[] = [];
  afterEach(() => {
    for (const editor of editors.splice(0)) editor.close();
  });
  const editorFor = (file: string) => {
    const editor = new FakeEditorOutput(file);
    editors.push(editor);
    return editor;
  };

  it('has lines over the rate limit dropped from memory and subscribers, counted, and reported by one marker', async () => {
    const clock = manualClock();
    const hub = hubs.open({ rateLimit: { linesPerSec: 100, burst: 100 }, clock: clock.now });
    trackRunning(hub, SERVER);
    const batches: LogEntry[][] = [];
    hub.subscribeBatch(SERVER.name, (entries) => batches.push([...entries]));
    const each: LogEntry[] = [];
    hub.subscribe(null, (entry) => each.push(entry));
    const { dir, stdout } = hub.rawPaths(SERVER.name);
    const editor = editorFor(stdout);

    // 250 lines at once, the clock standing still: the burst of 100 passes, 150 are dropped.
    editor.write(block(0, 250));
    await waitFor(() => hub.tail(SERVER.name, 1000).some(isMarker));
    const tail = hub.tail(SERVER.name, 1000);
    expect(tail.map((entry) => entry.message)).toEqual([...lines(0, 100), '… 150 lines dropped (rate limit 100 lines/s)']);
    expect(tail.at(-1)).toMatchObject({ level: 'WARN', source: 'controller', serverId: SERVER.id, name: SERVER.name });
    for (const entry of tail) expect(entry.timestamp).toBe('2026-11-22T06:00:00.000Z');
    expect(hub.dropped(SERVER.name)).toBe(150);
    expect(hub.state).toEqual({
      rate_limit: { lines_per_sec: 100, burst: 100 },
      lines_dropped: 150,
    });

    // A second later the bucket holds 100 lines again: 50 new ones all pass, in order, no new marker.
    clock.advance(1000);
    editor.write(block(250, 300));
    await waitFor(() => hub.tail(SERVER.name, 1000).length === 151);
    const after = hub.tail(SERVER.name, 1000).map((entry) => entry.message);
    expect(after.slice(101)).toEqual(lines(250, 300));
    expect(after.filter((message) => message.includes('dropped'))).toHaveLength(1);
    expect(hub.dropped(SERVER.name)).toBe(150);

    // Subscribers saw exactly what memory holds, per entry and per batch.
    expect(each.map((entry) => entry.message)).toEqual(after);
    expect(batches.flat().map((entry) => entry.message)).toEqual(after);
    expect(batches.length).toBeLessThan(after.length);

    // Every line the editor wrote is on disk: editor.out as written, server.log with all 300.
    await hub.untrack(SERVER.name);
    expect(fs.readFileSync(stdout, 'utf8')).toBe(block(0, 300));
    expect(serverLogMessages(dir)).toEqual(lines(0, 300));
  });

  it('reports a flood that goes on with a marker at least every second of the clock', async () => {
    const clock = manualClock();
    // No poll: only the file watch wakes the hub, so no pause is seen between the two writes.
    const hub = hubs.open({ rateLimit: { linesPerSec: 100, burst: 100 }, clock: clock.now, pollIntervalMs: 60_000 });
    trackRunning(hub, SERVER);
    const editor = editorFor(hub.rawPaths(SERVER.name).stdout);

    editor.write(block(0, 300));
    await waitFor(() => hub.dropped(SERVER.name) === 200);
    clock.advance(1000);
    editor.write(block(300, 600));
    await waitFor(() => hub.dropped(SERVER.name) === 400);
    await waitFor(() => hub.tail(SERVER.name, 1000).some(isMarker));
    expect(hub.tail(SERVER.name, 1000).map((entry) => entry.message)).toEqual([
      ...lines(0, 100),
      ...lines(300, 400),
      '… 400 lines dropped (rate limit 100 lines/s)',
    ]);
  });

  it('delivers a flood under the limit whole and in order, in batches, whatever the writes cut', async () => {
    const hub = hubs.open({ rateLimit: { linesPerSec: 0 }, maxBufferBytes: 4 * 1024 * 1024, batchIntervalMs: 10 });
    trackRunning(hub, SERVER);
    let batches = 0;
    hub.subscribeBatch(SERVER.name, () => batches++);
    const { dir, stdout } = hub.rawPaths(SERVER.name);
    const editor = editorFor(stdout);

    // 5,000 lines written in pieces of 1 to 300 bytes that ignore line ends, the event loop
    // turning between pieces so that the hub reads at any point, mid-line included.
    const text = block(0, 5000);
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let at = 0; at < text.length;) {
      const size = 1 + Math.floor(random() * 300);
      editor.write(text.slice(at, at + size));
      at += size;
      if (random() < 0.3) await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(() => hub.tail(SERVER.name, 10_000).length === 5000);
    expect(hub.tail(SERVER.name, 10_000).map((entry) => entry.message)).toEqual(lines(0, 5000));
    expect(batches).toBeLessThan(5000);
    expect(hub.state).toEqual({ rate_limit: null, lines_dropped: 0 });
    await hub.untrack(SERVER.name);
    expect(serverLogMessages(dir)).toEqual(lines(0, 5000));
  });

  it('loses no line from the files while the limit drops: editor.out is emptied once read, server.log has every line', async () => {
    const clock = manualClock();
    const hub = hubs.open({ rateLimit: { linesPerSec: 10, burst: 10 }, clock: clock.now, maxFileBytes: 16 * 1024, maxFiles: 20 });
    trackRunning(hub, SERVER);
    const { dir, stdout } = hub.rawPaths(SERVER.name);
    const editor = editorFor(stdout);
    let largest = 0;
    for (let i = 0; i < 3000; i += 100) {
      editor.write(block(i, i + 100));
      largest = Math.max(largest, fs.statSync(stdout).size);
      // Output arrives over time: wait until the hub has read this block (all but the burst is dropped).
      await waitFor(() => hub.dropped(SERVER.name) === Math.max(0, i + 100 - 10));
    }
    // About 115 KB went through an editor.out that never held much more than 16 KiB.
    await waitFor(() => fs.statSync(stdout).size < 16 * 1024);
    expect(largest).toBeLessThan(16 * 1024 * 2);
    await hub.untrack(SERVER.name);
    expect(serverLogMessages(dir)).toEqual(lines(0, 3000));
  });
});

describe('a noisy editor on the live streams', () => {
  const clock = manualClock();
  const ctx = useLogStreams({ hubOptions: { rateLimit: { linesPerSec: 100, burst: 100 }, clock: () => clock.now() } });

  it('sends the lines under the limit in order, then the marker with the count', async () => {
    const frames: Record<string, unknown>[] = [];
    const socket = new WebSocket(`${ctx.streams.base}/ws/logs/${SERVER.id}?tail=0`);
    ctx.sockets.push(socket);
    socket.on('message', (data) => frames.push(JSON.parse(data.toString())));
    await opened(socket);
    const editor = new FakeEditorOutput(ctx.hub.rawPaths(SERVER.name).stdout);
    try {
      editor.write(block(0, 1000));
      await waitFor(() => frames.some((frame) => String(frame.message).includes('dropped')));
    } finally {
      editor.close();
    }
    expect(frames.map((frame) => frame.message)).toEqual([...lines(0, 100), '… 900 lines dropped (rate limit 100 lines/s)']);
    expect(frames.at(-1)).toMatchObject({ type: 'log', server_id: SERVER.id, level: 'WARN', source: 'controller' });
  });
});
