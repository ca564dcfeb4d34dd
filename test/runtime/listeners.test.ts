// Who listens on a loopback port, read from /proc against real sockets of real processes: a
// program of the server asked about, of another server, of no server; sockets the loopback does
// not reach; two programs sharing a port; and how long an answer is kept.
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listeningPorts, ListenerTable, loopbackListeners, portAnswers, socketHolders } from '../../src/runtime/listeners.ts';
import { freePort } from '../helpers/net.ts';
import { startPortProgram, type PortProgram } from '../helpers/port-program.ts';

const programs: PortProgram[] = [];
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(programs.splice(0).map((p) => p.stop()));
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function program(options: Parameters<typeof startPortProgram>[0]): Promise<PortProgram> {
  const started = await startPortProgram(options);
  programs.push(started);
  return started;
}

describe('loopbackListeners and socketHolders', () => {
  it('find the LISTEN socket of a port and the process that holds it', async () => {
    const alpha = await program({ server: 'alpha' });
    const inodes = (await loopbackListeners()).get(alpha.port);
    expect(inodes).toHaveLength(1);
    expect(socketHolders(inodes!).get(inodes![0])).toBe(alpha.pid);
  });

  it('count 0.0.0.0, ::1 and :: but not an address the loopback does not reach (127.0.0.2)', async () => {
    const any = await program({ server: 'alpha', host: '0.0.0.0' });
    const v6 = await program({ server: 'alpha', host: '::1' });
    const v6any = await program({ server: 'alpha', host: '::' });
    const elsewhere = await program({ server: 'alpha', host: '127.0.0.2' });
    const table = await loopbackListeners();
    expect(table.get(any.port)).toHaveLength(1);
    expect(table.get(v6.port)).toHaveLength(1);
    expect(table.get(v6any.port)).toHaveLength(1);
    expect(table.get(elsewhere.port)).toBeUndefined();
  });
});

describe('ListenerTable', () => {
  it('answers this for a program of the server, other for another server\'s or no server\'s, none for a free port', async () => {
    const alpha = await program({ server: 'alpha' });
    const beta = await program({ server: 'beta', host: '::1' });
    const nobody = await program({});
    const free = await freePort();
    const table = new ListenerTable();
    expect(await table.of('alpha', alpha.port)).toBe('this');
    expect(await table.of('beta', alpha.port)).toBe('other');
    expect(await table.of('beta', beta.port)).toBe('this');
    expect(await table.of('alpha', beta.port)).toBe('other');
    expect(await table.of('alpha', nobody.port)).toBe('other');
    expect(await table.of('alpha', free)).toBe('none');
  });

  it('answers other when another server\'s program shares the port (SO_REUSEPORT): a connection may land on either', async () => {
    const alpha = await program({ server: 'alpha', reusePort: true });
    const table = new ListenerTable();
    expect(await table.of('alpha', alpha.port)).toBe('this');
    await program({ server: 'beta', port: alpha.port, reusePort: true });
    const fresh = new ListenerTable();
    expect(await fresh.of('alpha', alpha.port)).toBe('other');
  });

  it('lists the ports a server\'s programs listen on, and only theirs', async () => {
    const one = await program({ server: 'alpha' });
    const two = await program({ server: 'alpha', host: '::' });
    const theirs = await program({ server: 'beta' });
    const ports = await new ListenerTable().portsOf('alpha');
    expect(ports).toEqual(expect.arrayContaining([one.port, two.port]));
    expect(ports).not.toContain(theirs.port);
    expect(ports).toEqual([...ports].sort((a, b) => a - b));
  });

  it('keeps a read for its TTL, but reads again for a port found free in a read older than the question', async () => {
    let now = 0;
    const table = new ListenerTable({ ttlMs: 1000, recheckMs: 0, now: () => now });
    const port = await freePort();
    expect(await table.of('alpha', port)).toBe('none');
    // A program of no server (this test process) starts listening: asked afterwards, it is seen at once.
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    now = 10;
    expect(await table.of('alpha', port)).toBe('other');
    // A port seen listening is not looked for again before the TTL, even once it is closed.
    await new Promise((resolve) => server.close(resolve));
    servers.length = 0;
    now = 900;
    expect(await table.of('alpha', port)).toBe('other');
    now = 1200;
    expect(await table.of('alpha', port)).toBe('none');
  });

  it('reads again for a free port no sooner than the recheck after the last read, however many ask', async () => {
    let now = 0;
    const table = new ListenerTable({ ttlMs: 60_000, recheckMs: 40, now: () => now });
    const port = await freePort();
    expect(await table.of('alpha', port)).toBe('none');
    now = 1;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => table.of('alpha', port)));
    expect(answers).toEqual(Array(20).fill('none'));
    // They waited for a read 40 ms after the last (the clock given says 1 ms passed).
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
  });
});

describe('listeningPorts', () => {
  it('asks the workload where it can tell, else which declared ports accept a connection at the editor\'s address (a Pod\'s)', async () => {
    const open = await program({});
    const free = await freePort();
    const endpoint = { host: '127.0.0.1', port: 1 };
    expect(await portAnswers('127.0.0.1', open.port)).toBe(true);
    expect(await portAnswers('127.0.0.1', free)).toBe(false);
    expect(await listeningPorts({})('alpha', endpoint, [free, open.port])).toEqual([open.port]);
    const asked: string[] = [];
    const workload = { portsOf: async (name: string) => (asked.push(name), [4242]) };
    expect(await listeningPorts(workload)('alpha', endpoint, [open.port])).toEqual([4242]);
    expect(asked).toEqual(['alpha']);
  });
});
