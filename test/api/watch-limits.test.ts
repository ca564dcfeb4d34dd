// The watch streams' bounds over real HTTP, with limits small enough to reach: the cap on open
// streams (503 in the envelope, room again once one closes), the `: ping` comments, and close()
// ending every stream and refusing new ones.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerAccess } from '../../src/api/access.ts';
import { createApp } from '../../src/api/app.ts';
import { watchRoutes, WatchStreams } from '../../src/api/routes/watch.ts';
import { ServerFeed } from '../../src/api/server-feed.ts';
import { StatsSampler } from '../../src/runtime/stats.ts';
import { eventually, request } from '../helpers/service.ts';
import { fakeIndex } from '../helpers/fake-index.ts';
import { openWatch, type WatchStream } from '../helpers/watch-stream.ts';

let server: Server;
let url: string;
let streams: WatchStreams;
const opened: WatchStream[] = [];

beforeAll(async () => {
  const index = fakeIndex();
  const stats = new StatsSampler(() => new Map(), async () => new Map(), 60_000);
  const access = new ServerAccess({ config: () => ({ access: 'shared', admins: [] }), deployed: false });
  streams = new WatchStreams({ feed: new ServerFeed(index, stats), access, limits: { maxWatchers: 2, pingMs: 50 }, log: () => undefined });
  const router = Router();
  watchRoutes(streams, router);
  server = createApp({ routers: [router], log: () => undefined }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const stream of opened) stream.close();
  streams.close();
  await new Promise((resolve) => server.close(resolve));
});

const watch = async () => {
  const stream = await openWatch(url);
  opened.push(stream);
  return stream;
};

describe('watch stream limits', () => {
  it('answers 503 in the envelope past the cap on open streams, and takes one again once a stream closes', async () => {
    const first = await watch();
    const second = await watch();
    await first.next((e) => e.type === 'SYNCED');
    await second.next((e) => e.type === 'SYNCED');
    const refused = await request(url, 'GET', '/servers?watch=1');
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ status: 'error', error: { code: 'TOO_MANY_WATCHERS' } });
    expect(refused.body.error.message).toContain('2 watch streams are open');
    first.close();
    await eventually(() => streams.state.watchers === 1);
    const third = await watch();
    expect(third.status).toBe(200);
    await third.next((e) => e.type === 'SYNCED');
    expect(streams.state).toMatchObject({ watchers: 2, max_watchers: 2 });
  });

  it('sends a `: ping` comment on every open stream at the interval', async () => {
    const live = opened.filter((s) => !s.ended);
    await eventually(() => live.every((s) => s.comments.filter((c) => c === ': ping').length >= 2));
    for (const stream of live) expect(stream.problems).toEqual([]);
  });

  it('ends every stream on close, and refuses new ones with 503', async () => {
    const live = opened.filter((s) => !s.ended);
    expect(live.length).toBe(2);
    streams.close();
    await eventually(() => live.every((s) => s.ended));
    const refused = await request(url, 'GET', '/servers?watch=1');
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('SHUTTING_DOWN');
  });
});
