// A new watch stream's list at the size of a course (thousands of servers): written in chunks of
// about LIST_CHUNK_BYTES, the next only once the socket has taken the one before, with the changes
// made meanwhile held (the latest per server) until SYNCED is out; a stream that reads nothing
// while too much is held for it is dropped. The socket is a Writable whose writes complete only
// when the test says so, so "the socket has not taken it yet" is a state the test holds.
import { Writable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerAccess } from '../../src/api/access.ts';
import { LIST_CHUNK_BYTES, WatchStreams } from '../../src/api/routes/watch.ts';
import { ServerFeed } from '../../src/api/server-feed.ts';
import { API_VERSION, KIND, type EditorServer } from '../../src/manifests/types.ts';
import { StatsSampler } from '../../src/runtime/stats.ts';
import { fakeIndex } from '../helpers/fake-index.ts';
import { eventually } from '../helpers/wait.ts';

const SERVERS = 3000;

function server(i: number, extra: Partial<EditorServer['spec']> = {}, uid = `5f0c0000-0000-4000-8000-${String(i).padStart(12, '0')}`): EditorServer {
  return {
    apiVersion: API_VERSION, kind: KIND,
    metadata: { name: `seat-${i}`, uid },
    spec: { displayName: `Course seat ${i}`, running: false, ...extra },
    status: { phase: 'Stopped', port: 20_000 + i },
  };
}

/** A response whose socket takes each write only when `take()` is called; what it took, parsed as events. */
class HeldSocket extends Writable {
  readonly written: Buffer[] = [];
  readonly #waiting: Array<() => void> = [];
  statusCode = 0;
  readonly headers = new Map<string, string>();
  readonly req = { socket: { remoteAddress: '127.0.0.1' } };

  constructor() {
    super({ highWaterMark: 16 * 1024 });
  }
  _write(chunk: Buffer, _encoding: string, done: () => void): void {
    // A copy: the service may reuse its buffer once the write is done, as a socket has copied it by then.
    this.written.push(Buffer.from(chunk));
    this.#waiting.push(done);
  }
  setHeader(name: string, value: string): void {
    this.headers.set(name.toLowerCase(), value);
  }
  /** The socket takes what waits (one write at a time, as Writable hands them over). */
  take(): boolean {
    const done = this.#waiting.shift();
    done?.();
    return done !== undefined;
  }
  get events(): Array<{ id: number; type: string; object: any }> {
    return Buffer.concat(this.written).toString().split('\n\n').filter(Boolean).map((message) => {
      const [idLine, dataLine] = message.split('\n');
      return { id: Number(idLine.slice('id: '.length)), ...JSON.parse(dataLine.slice('data: '.length)) };
    });
  }
}

let streams: WatchStreams | undefined;
afterEach(() => streams?.close());

function setUp(options: { maxBufferedBytes?: number } = {}) {
  const index = fakeIndex();
  for (let i = 0; i < SERVERS; i++) index.records.set(`seat-${i}`, { name: `seat-${i}`, server: server(i) });
  const stats = new StatsSampler(() => new Map(), async () => new Map(), 60_000);
  const feed = new ServerFeed(index, stats);
  const access = new ServerAccess({ config: () => ({ access: 'shared', admins: [] }), deployed: false });
  const logs: string[] = [];
  streams = new WatchStreams({ feed, access, limits: options, log: (line) => logs.push(line) });
  const socket = new HeldSocket();
  streams.open({ headers: {}, socket: { remoteAddress: '127.0.0.1' } }, socket as unknown as ServerResponse);
  /** Lets the socket take writes until `done` holds (the next chunk comes a turn of the event loop later). */
  const takeUntil = (done: () => boolean) => eventually(() => {
    socket.take();
    return done();
  }, 10_000, 1);
  const changed = (name: string, next: EditorServer | undefined) => {
    if (next) index.records.set(name, { name, server: next });
    else index.records.delete(name);
    index.emit(next ? 'changed' : 'deleted', name);
  };
  return { index, socket, takeUntil, changed, logs };
}

describe('a new watch stream of thousands of servers', () => {
  it('writes its list in chunks of about 64 KiB, the next once the socket took the one before', async () => {
    const { socket, takeUntil } = setUp();
    expect(socket.statusCode).toBe(200);
    expect(socket.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // Nothing taken yet: one chunk written, and nothing more while it waits.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(socket.written).toHaveLength(1);
    await takeUntil(() => socket.events.at(-1)?.type === 'SYNCED' && socket.writableLength === 0);
    const sizes = socket.written.map((chunk) => chunk.length);
    expect(sizes.length).toBeGreaterThan(10);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(LIST_CHUNK_BYTES);
    // Whole messages in each chunk, and together the list as ever: ADDED 1…n, SYNCED n+1.
    for (const chunk of socket.written) expect(chunk.toString().endsWith('\n\n')).toBe(true);
    const events = socket.events;
    expect(events).toHaveLength(SERVERS + 1);
    expect(events.map((e) => e.id)).toEqual(Array.from({ length: SERVERS + 1 }, (_, i) => i + 1));
    expect(events.slice(0, -1).every((e) => e.type === 'ADDED')).toBe(true);
    expect(events.slice(0, -1).map((e) => e.object.manifest)).toEqual(Array.from({ length: SERVERS }, (_, i) => `seat-${i}`));
    expect(events.at(-1)).toEqual({ id: SERVERS + 1, type: 'SYNCED', object: null });
  });

  it('sends the changes made while its list was written after SYNCED: the latest of each server, a deletion as DELETED', async () => {
    const { socket, takeUntil, changed } = setUp();
    socket.take();
    // While the list is on its way: one server changed twice, one deleted, one added then deleted, one added.
    changed('seat-5', server(5, { displayName: 'Renamed once' }));
    changed('seat-5', server(5, { displayName: 'Renamed twice' }));
    changed('seat-2999', undefined);
    changed('brief', server(90_001));
    changed('brief', undefined);
    changed('late', server(90_002));
    expect(socket.events.every((e) => e.type === 'ADDED')).toBe(true);
    await takeUntil(() => socket.events.some((e) => e.type === 'SYNCED') && socket.writableLength === 0);
    const events = socket.events;
    const synced = events.findIndex((e) => e.type === 'SYNCED');
    // The list is the servers as they were when the stream opened.
    expect(synced).toBe(SERVERS);
    expect(events[5].object.name).toBe('Course seat 5');
    expect(events.slice(synced + 1).map((e) => [e.id, e.type, e.object.manifest, e.object.name])).toEqual([
      [SERVERS + 2, 'MODIFIED', 'seat-5', 'Renamed twice'],
      [SERVERS + 3, 'DELETED', 'seat-2999', 'Course seat 2999'],
      [SERVERS + 4, 'ADDED', 'seat-90002', 'Course seat 90002'],
    ]);
    // And changes after SYNCED go out as they happen.
    changed('seat-7', server(7, { displayName: 'After' }));
    await takeUntil(() => socket.events.at(-1)?.object?.name === 'After');
    expect(socket.events.at(-1)).toMatchObject({ id: SERVERS + 5, type: 'MODIFIED' });
  });

  it('drops a stream that reads nothing of its list while more than the limit is held for it', async () => {
    const { socket, changed, logs } = setUp({ maxBufferedBytes: 256 * 1024 });
    // Every server renamed with a long name while the first chunk waits: far more than 256 KiB held.
    for (let i = 0; i < 1000 && !socket.destroyed; i++) changed(`seat-${i}`, server(i, { displayName: `Renamed ${'x'.repeat(400)} ${i}` }));
    expect(socket.destroyed).toBe(true);
    expect(streams!.state).toMatchObject({ watchers: 0, dropped_slow: 1 });
    expect(logs.join('\n')).toMatch(/watch stream of 127\.0\.0\.1 dropped: it read nothing while \d+ KiB waited \(more than 256 KiB\)/);
  });
});
