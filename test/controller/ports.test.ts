// The port allocator: ports from the range, never two names on one port, never a port another
// process listens on, and the same port again for the same name.
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PortAllocator, portIsFree, type PortProbe } from '../../src/controller/ports.ts';

const alwaysFree: PortProbe = async () => true;

/** A probe that answers after a random short delay, so concurrent callers interleave. */
const slowProbe: PortProbe = (port) => new Promise((resolve) => setTimeout(() => resolve(port > 0), Math.random() * 10));

const listeners: Server[] = [];

/** Opens a real listener on 127.0.0.1, as another program on the machine would. */
async function listen(port = 0): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => resolve());
  });
  listeners.push(server);
  return (server.address() as { port: number }).port;
}

afterEach(async () => {
  await Promise.all(listeners.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('PortAllocator', () => {
  it('hands out ports from the range in order and gives a name the same port again', async () => {
    const ports = new PortAllocator({ min: 8010, max: 8020 }, alwaysFree);
    expect(await ports.allocate('a')).toBe(8010);
    expect(await ports.allocate('b')).toBe(8011);
    expect(await ports.allocate('a')).toBe(8010);
    expect(ports.portOf('a')).toBe(8010);
    expect(ports.owner(8011)).toBe('b');
  });

  it('skips a port that another process is listening on', async () => {
    const held = await listen();
    expect(await portIsFree(held)).toBe(false);
    const ports = new PortAllocator({ min: held, max: held + 10 });
    const given = await ports.allocate('a');
    expect(given).toBeDefined();
    expect(given).not.toBe(held);
    expect(given).toBeGreaterThan(held);
    expect(given).toBeLessThanOrEqual(held + 10);
    expect(await portIsFree(given!)).toBe(true);
  });

  it('returns undefined when every port of the range is taken, by names or by other processes', async () => {
    const held = await listen();
    expect(await new PortAllocator({ min: held, max: held }).allocate('a')).toBeUndefined();

    const ports = new PortAllocator({ min: 8010, max: 8011 }, alwaysFree);
    await ports.allocate('a');
    await ports.allocate('b');
    expect(await ports.allocate('c')).toBeUndefined();
    expect(ports.portOf('c')).toBeUndefined();
  });

  it('gives 20 concurrent callers 20 distinct ports', async () => {
    const ports = new PortAllocator({ min: 9000, max: 9019 }, slowProbe);
    const names = Array.from({ length: 20 }, (_, i) => `server-${i}`);
    const given = await Promise.all(names.map((n) => ports.allocate(n)));
    expect(given.every((p) => p !== undefined && p >= 9000 && p <= 9019)).toBe(true);
    expect(new Set(given).size).toBe(20);
    names.forEach((n, i) => expect(ports.owner(given[i]!)).toBe(n));
    expect(await ports.allocate('one-too-many')).toBeUndefined();
  });

  it('gives one name one port even when it asks twice at once, leaking none', async () => {
    const ports = new PortAllocator({ min: 9000, max: 9001 }, slowProbe);
    const [first, second] = await Promise.all([ports.allocate('a'), ports.allocate('a')]);
    expect(first).toBe(second);
    expect(ports.portOf('a')).toBe(first);
    ports.release('a');
    expect(await Promise.all([ports.allocate('b'), ports.allocate('c')])).toEqual([9000, 9001]);
  });

  it('reserves a port for its name, and refuses a port another name owns', async () => {
    const ports = new PortAllocator({ min: 8010, max: 8020 }, alwaysFree);
    expect(ports.reserve('a', 8015)).toBe(true);
    expect(ports.reserve('a', 8015)).toBe(true);
    expect(ports.reserve('b', 8015)).toBe(false);
    expect(ports.owner(8015)).toBe('a');
    expect(ports.portOf('b')).toBeUndefined();
    expect(await ports.allocate('a')).toBe(8015);
  });

  it('moves a name to a newly reserved port and frees its old one', async () => {
    const ports = new PortAllocator({ min: 8010, max: 8010 }, alwaysFree);
    expect(await ports.allocate('a')).toBe(8010);
    expect(ports.reserve('a', 9999)).toBe(true);
    expect(ports.owner(8010)).toBeUndefined();
    expect(await ports.allocate('b')).toBe(8010);
  });

  it('frees a released port for the next name', async () => {
    const ports = new PortAllocator({ min: 8010, max: 8010 }, alwaysFree);
    await ports.allocate('a');
    expect(await ports.allocate('b')).toBeUndefined();
    ports.release('a');
    ports.release('a'); // twice is harmless
    expect(ports.portOf('a')).toBeUndefined();
    expect(await ports.allocate('b')).toBe(8010);
    expect(ports.owner(8010)).toBe('b');
  });

  it('hands out the lowest free port, also one freed below those handed out since, and tries a busy one again', async () => {
    const busy = new Set([8012]);
    const ports = new PortAllocator({ min: 8010, max: 8020 }, async (port) => !busy.has(port));
    for (const name of ['a', 'b', 'c', 'd']) await ports.allocate(name);
    expect([ports.portOf('c'), ports.portOf('d')]).toEqual([8013, 8014]);
    ports.release('b');
    expect(await ports.allocate('e')).toBe(8011);
    busy.clear();
    expect(await ports.allocate('f')).toBe(8012);
    expect(await ports.allocate('g')).toBe(8015);
    ports.setRange({ min: 8000, max: 8020 });
    expect(await ports.allocate('h')).toBe(8000);
  });

  it('never hands out, nor reserves, a port excluded from it (the service\'s own)', async () => {
    const ports = new PortAllocator({ min: 8010, max: 8012 }, alwaysFree);
    ports.exclude(8011, 'the port of this service itself');
    expect(ports.excluded(8011)).toBe('the port of this service itself');
    expect(ports.excluded(8012)).toBeUndefined();
    expect(await Promise.all([ports.allocate('a'), ports.allocate('b'), ports.allocate('c')])).toEqual([8010, 8012, undefined]);
    expect(ports.reserve('d', 8011)).toBe(false);
    expect(ports.owner(8011)).toBeUndefined();
  });

  it('never gives out a port outside 1024-65535, whatever the range says', async () => {
    const low = new PortAllocator({ min: 1022, max: 1024 }, alwaysFree);
    expect(await low.allocate('a')).toBe(1024);
    expect(await low.allocate('b')).toBeUndefined();
    const high = new PortAllocator({ min: 65535, max: 65537 }, alwaysFree);
    expect(await high.allocate('a')).toBe(65535);
    expect(await high.allocate('b')).toBeUndefined();
    expect(low.excluded(80)).toMatch(/1024-65535/);
    expect(low.reserve('c', 80)).toBe(false);
  });
});
