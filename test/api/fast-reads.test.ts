// GET /servers and GET /servers/{id} in their plain form are answered before express (src/api/fast-reads.ts).
// Against the real service: the same status, headers and bytes as express's answer to the same read
// spelled so that express takes it (`/servers?`), for every user under `access: owner`; the
// cases left to express still answered as before; and the API's timing files them under their routes.
import { EventEmitter } from 'node:events';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fastReads } from '../../src/api/fast-reads.ts';
import { eventually, request, startTestService, type TestService } from '../helpers/service.ts';
import { nextCall } from '../helpers/wait.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com', 'X-Forwarded-User': '1002@42' };
const ADMIN = { 'X-Forwarded-Email': 'root@example.com', 'X-Forwarded-User': '1000@42' };
const UPTIME = /"uptime":(-?[0-9.e+-]+|null)/g;

let service: TestService;

interface Raw {
  status: number;
  /** Raw header lines, name lower-cased, without Date and the connection's own. */
  headers: string[];
  body: string;
}

/** Raw header lines, name lower-cased, sorted, without Date and the connection's own. */
function headerLines(raw: string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (!['date', 'connection', 'keep-alive'].includes(name)) lines.push(`${name}: ${raw[i + 1]}`);
  }
  return lines.sort();
}

/** One request on its own connection, read raw. */
function raw(method: string, path: string, who: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(service.url + path, { method, headers: who, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: headerLines(res.rawHeaders), body }));
    });
    req.on('error', reject).end();
  });
}

/** Uptimes differ by the time between two answers: set aside. */
const withoutUptime = (answer: Raw) => ({ ...answer, body: answer.body.replace(UPTIME, '"uptime":_') });

/**
 * Listens to what may change an answer between two reads: a stats sample, and a record the
 * controller changed, deleted or looked at again (the events the feed refreshes on).
 */
function onChange(listener: () => void): () => void {
  const { index } = service;
  const offs = [service.stats.onSample(listener), index.on('changed', listener), index.on('deleted', listener), index.on('reconciled', listener)];
  return () => {
    for (const off of offs) off();
  };
}

/**
 * The plain read and express's answer agree. A stats sample or a reconcile between them (or an
 * uptime one digit longer, in content-length) is tried again once that change has landed: at
 * once when one did during the attempt, else after the next one.
 */
async function sameAsExpress(path: string, who: Record<string, string>): Promise<Raw> {
  let changes = 0;
  const off = onChange(() => changes++);
  try {
    for (let attempt = 0; ; attempt++) {
      const before = changes;
      const fast = await raw('GET', path, who);
      const slow = await raw('GET', `${path}?`, who);
      if (JSON.stringify(withoutUptime(fast)) === JSON.stringify(withoutUptime(slow))) return fast;
      if (attempt === 5) expect(withoutUptime(fast)).toEqual(withoutUptime(slow));
      if (changes === before) await nextCall(onChange, undefined, 5_000);
    }
  } finally {
    off();
  }
}

beforeAll(async () => {
  service = await startTestService({ requireIdentity: true, config: { access: 'owner', admins: ['root@example.com'] } });
});
afterAll(async () => {
  await service?.stop();
});

describe('plain reads before express', () => {
  it('answer what express answers, per user, for lists and records', async () => {
    const alice = (await request(service.url, 'POST', '/servers', { name: 'Alice ✓ box' }, ALICE)).body;
    const bob = (await request(service.url, 'POST', '/servers', { name: 'Bob box' }, BOB)).body;
    expect((await request(service.url, 'POST', `/servers/${alice.id}/start`, undefined, ALICE)).status).toBe(200);
    await eventually(async () => (await request(service.url, 'GET', `/servers/${alice.id}`, undefined, ALICE)).body.memory_mb > 0);

    const everyone = await sameAsExpress('/servers', ADMIN);
    expect(everyone.status).toBe(200);
    expect(everyone.headers).toContain('content-type: application/json; charset=utf-8');
    expect(everyone.headers).toContain('access-control-allow-origin: *');
    expect(everyone.headers).toContain(`content-length: ${Buffer.byteLength(everyone.body)}`);
    expect(JSON.parse(everyone.body).map((s: { id: string }) => s.id).sort()).toEqual([alice.id, bob.id].sort());
    expect(JSON.parse((await sameAsExpress('/servers', ALICE)).body).map((s: { id: string }) => s.id)).toEqual([alice.id]);
    expect(JSON.parse((await sameAsExpress('/servers', BOB)).body).map((s: { id: string }) => s.id)).toEqual([bob.id]);

    const record = await sameAsExpress(`/servers/${alice.id}`, ALICE);
    expect(JSON.parse(record.body)).toMatchObject({ id: alice.id, status: 'running' });
    await sameAsExpress(`/servers/${alice.id}`, ADMIN);
    await sameAsExpress(`/servers/${bob.id}`, BOB);
  });

  it('leave everything else to express: others\' records, unknown ids, HEAD, watch, other spellings', async () => {
    const { body: servers } = await request(service.url, 'GET', '/servers', undefined, ADMIN);
    const alices = servers.find((s: { owner?: string; name: string }) => s.name === 'Alice ✓ box');
    // Bob may not see Alice's server: the same 404 as an unknown id.
    const hidden = await raw('GET', `/servers/${alices.id}`, BOB);
    expect(hidden.status).toBe(404);
    expect(JSON.parse(hidden.body).error.code).toBe('SERVER_NOT_FOUND');
    expect((await raw('GET', '/servers/no-such-id', ADMIN)).status).toBe(404);
    expect((await raw('GET', '/servers/a%20b', ADMIN)).status).toBe(404);
    // HEAD: headers only.
    const head = await raw('HEAD', '/servers', ADMIN);
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    // Express's own spellings still list.
    expect(JSON.parse((await raw('GET', '/servers/', ADMIN)).body)).toHaveLength(2);
    // A bad watch value is still refused.
    expect((await raw('GET', '/servers?watch=maybe', ADMIN)).status).toBe(400);
    // Without the identity the deployment requires, refused before any read.
    expect((await raw('GET', '/servers', {})).status).toBe(401);
  });

  it('are timed under their route patterns', async () => {
    const count = async (route: string) => {
      const text = (await raw('GET', '/metrics', ADMIN)).body;
      const line = text.split('\n').find((l) => l.startsWith('devbox_api_request_duration_seconds_count{')
        && l.includes('method="GET"') && l.includes(`route="${route}"`) && l.includes('status="200"'));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const { body: servers } = await request(service.url, 'GET', '/servers', undefined, ADMIN);
    const [list, one] = [await count('/servers'), await count('/servers/:id')];
    await raw('GET', '/servers', ADMIN);
    await raw('GET', '/servers', ADMIN);
    await raw('GET', `/servers/${servers[0].id}`, ADMIN);
    expect(await count('/servers')).toBe(list + 2);
    expect(await count('/servers/:id')).toBe(one + 1);
    expect(await count('unmatched')).toBe(0);
  });
});

/** A watch stream read until SYNCED, then closed: its status, headers (as raw() keeps them) and events. */
function watchUntilSynced(path: string, who: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(service.url + path, { headers: who, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
        if (!body.includes('"type":"SYNCED"')) return;
        req.destroy();
        resolve({ status: res.statusCode!, headers: headerLines(res.rawHeaders), body });
      });
    });
    req.on('error', (error) => (req.destroyed ? undefined : reject(error))).end();
  });
}

describe('the watch stream before express', () => {
  it('opens with the headers and events express\'s stream has, per user, also many at once', async () => {
    for (const who of [ADMIN, ALICE, BOB]) {
      for (let attempt = 0; ; attempt++) {
        const fast = withoutUptime(await watchUntilSynced('/servers?watch=1', who));
        // Another spelling of the same query: express's route.
        const slow = withoutUptime(await watchUntilSynced('/servers?watch=1&', who));
        if (JSON.stringify(fast) === JSON.stringify(slow)) {
          expect(fast.status).toBe(200);
          expect(fast.headers).toContain('content-type: text/event-stream; charset=utf-8');
          expect(fast.headers).toContain('access-control-allow-origin: *');
          const events = fast.body.split('\n\n').filter(Boolean);
          const { body: servers } = await request(service.url, 'GET', '/servers', undefined, who);
          expect(events).toHaveLength(servers.length + 1);
          expect(events.at(-1)).toBe(`id: ${servers.length + 1}\ndata: {"type":"SYNCED","object":null}`);
          break;
        }
        if (attempt === 5) expect(fast).toEqual(slow);
      }
    }
    // Twenty streams opened at once each get the whole list (none reads another's bytes).
    const { body: servers } = await request(service.url, 'GET', '/servers', undefined, ADMIN);
    const streams = await Promise.all(Array.from({ length: 20 }, () => watchUntilSynced('/servers?watch=1', ADMIN)));
    for (const stream of streams) {
      const objects = stream.body.split('\n\n').filter(Boolean).map((e) => JSON.parse(e.split('\ndata: ')[1]).object);
      expect(objects.slice(0, -1).map((o: { id: string }) => o.id)).toEqual(servers.map((s: { id: string }) => s.id));
    }
  });
});

describe('the list buffer lent to an answer', () => {
  /** An answer whose bytes stay with the socket until `done()`, as a slow client's would. */
  const pending = () => {
    const res = new EventEmitter() as EventEmitter & { body?: Buffer; writeHead: () => void; end: (body: Buffer) => void; done: () => void };
    res.writeHead = () => undefined;
    res.end = (body: Buffer) => (res.body = body);
    res.done = () => res.emit('close');
    return res;
  };
  let next = 'a';
  const reads = fastReads({
    // Each list fills what it is given with the next letter: a reused buffer shows as overwritten bytes.
    // (The unfiltered list comes as chunks when it has a layout; a list without one is assembled in the lent buffer.)
    feed: { listChunks: (alloc: (n: number) => Buffer) => alloc(64 * 1024).fill(next) } as never,
    index: { nameOfUid: () => undefined, records: new Map() },
    access: { filterFor: () => undefined, sees: () => true },
    cors: { headersFor: () => [] },
  });
  const answer = (letter: string) => {
    next = letter;
    const res = pending();
    expect(reads({ method: 'GET', url: '/servers' } as never, res as never)).toBe(true);
    return res;
  };

  it('is not written again while an answer still holds it, and is reused once it is done', () => {
    const first = answer('a');
    const second = answer('b');
    expect(first.body!.every((byte) => byte === 'a'.charCodeAt(0))).toBe(true);
    expect(second.body!.buffer).not.toBe(first.body!.buffer);
    first.done();
    second.done();
    const third = answer('c');
    expect(third.body!.buffer).toBe(first.body!.buffer);
    expect(third.body!.every((byte) => byte === 'c'.charCodeAt(0))).toBe(true);
    third.done();
  });
});
