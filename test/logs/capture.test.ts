import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { LogEntry } from '../../src/logs/entry.ts';
import { formatLogLine } from '../../src/logs/entry.ts';
import type { LogHub } from '../../src/logs/hub.ts';
import { FakeEditorOutput, SERVER, useHubs, waitFor, trackRunning } from './fixtures.ts';

describe('capturing an editor output', () => {
  const hubs = useHubs();
  let hub: LogHub;
  let outputs: FakeEditorOutput[];

  beforeEach(() => {
    hub = hubs.open();
    trackRunning(hub, SERVER);
    outputs = [];
  });

  afterEach(() => {
    for (const output of outputs) output.close();
  });

  const open = (file: string): FakeEditorOutput => {
    const output = new FakeEditorOutput(file);
    outputs.push(output);
    return output;
  };

  it('turns each stdout line into an INFO entry and each stderr line into a WARN entry from the server', async () => {
    const seen: LogEntry[] = [];
    hub.subscribe(SERVER.name, (entry) => seen.push(entry));
    const { stdout, stderr } = hub.rawPaths(SERVER.name);
    open(stdout).write('HTTP server listening on http://127.0.0.1:8012/\n');
    open(stderr).write('[warn] extension host slow to start\n');

    await waitFor(() => seen.length === 2);
    const byMessage = Object.fromEntries(seen.map((entry) => [entry.message, entry]));
    expect(byMessage['HTTP server listening on http://127.0.0.1:8012/']).toMatchObject({
      serverId: SERVER.id,
      serverName: SERVER.displayName,
      name: SERVER.name,
      level: 'INFO',
      source: 'server',
    });
    expect(byMessage['[warn] extension host slow to start']).toMatchObject({ level: 'WARN', source: 'server' });
    for (const entry of seen) expect(new Date(entry.timestamp).toISOString()).toBe(entry.timestamp);
    expect(hub.tail(SERVER.name, 10).map((entry) => entry.message).sort()).toEqual(
      ['HTTP server listening on http://127.0.0.1:8012/', '[warn] extension host slow to start'].sort(),
    );
  });

  it('holds a partial line until its newline arrives', async () => {
    const { stdout } = hub.rawPaths(SERVER.name);
    const output = open(stdout);
    output.write('first line\nsecond ');
    await waitFor(() => hub.tail(SERVER.name, 10).length === 1);
    // Let the hub read the file several more times, each a chance to (wrongly) emit the half line:
    // every read opens the file, and one starts only once the read before it was stored, so the
    // fourth open from now means three whole reads (the poll is every 50 ms).
    const opens = vi.spyOn(fs.promises, 'open');
    try {
      await waitFor(() => opens.mock.calls.filter(([file]) => file === stdout).length >= 4);
    } finally {
      opens.mockRestore();
    }
    expect(hub.tail(SERVER.name, 10).map((entry) => entry.message)).toEqual(['first line']);

    output.write('half\r\n\nthird line\n');
    await waitFor(() => hub.tail(SERVER.name, 10).length === 3);
    expect(hub.tail(SERVER.name, 10).map((entry) => entry.message)).toEqual(['first line', 'second half', 'third line']);
  });

  it('records controller events with source controller and ignores events for an unknown server', () => {
    const seen: LogEntry[] = [];
    hub.subscribe(null, (entry) => seen.push(entry));
    hub.event(SERVER.name, 'INFO', 'started (pid 4242)');
    hub.event(SERVER.name, 'ERROR', 'crashed:\nexit code 1');
    hub.event('no-such-server', 'INFO', 'started');

    expect(seen.map(({ level, source, message }) => ({ level, source, message }))).toEqual([
      { level: 'INFO', source: 'controller', message: 'started (pid 4242)' },
      { level: 'ERROR', source: 'controller', message: 'crashed: exit code 1' },
    ]);
    expect(hub.tail('no-such-server', 10)).toEqual([]);
  });

  it('writes every entry to server.log as timestamp, level, source and text', async () => {
    const { dir, stderr } = hub.rawPaths(SERVER.name);
    hub.event(SERVER.name, 'INFO', 'starting');
    open(stderr).write('port already in use\n');
    await waitFor(() => hub.tail(SERVER.name, 10).length === 2);
    await hub.untrack(SERVER.name); // flushes

    const lines = fs.readFileSync(`${dir}/server.log`, 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[INFO\] \[controller\] starting$/);
    expect(lines[1]).toMatch(/^\S+Z \[WARN\] \[server\] port already in use$/);
    expect(
      formatLogLine({
        serverId: SERVER.id,
        serverName: SERVER.displayName,
        name: SERVER.name,
        level: 'WARN',
        source: 'server',
        message: 'text',
        timestamp: '2026-11-22T06:00:01.123Z',
      }),
    ).toBe('2026-11-22T06:00:01.123Z [WARN] [server] text');
  });

  it('deletes the log folder when a server is untracked with remove', async () => {
    const { dir } = hub.rawPaths(SERVER.name);
    hub.event(SERVER.name, 'INFO', 'deleting');
    await hub.untrack(SERVER.name, { remove: true });
    expect(fs.existsSync(dir)).toBe(false);
  });
});

describe('a server that is tracked and never runs', () => {
  const hubs = useHubs();

  it('has no log folder until its first event is written, then one with server.log', async () => {
    const hub = hubs.open();
    hub.track(SERVER);
    const { dir } = hub.rawPaths(SERVER.name);
    expect(fs.existsSync(dir)).toBe(false);
    hub.event(SERVER.name, 'INFO', 'created "Data pipeline"');
    await hub.untrack(SERVER.name); // flushes
    expect(fs.readFileSync(`${dir}/server.log`, 'utf8')).toMatch(/\[INFO\] \[controller\] created "Data pipeline"\n$/);
  });
});

describe('the poll behind the folder watch, for an event the watch missed', () => {
  const hubs = useHubs();
  const outputs: FakeEditorOutput[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const output of outputs.splice(0)) output.close();
  });

  it('reads output that came without an event', async () => {
    // A watch that never reports anything, as one whose event was lost.
    const quiet = Object.assign(new EventEmitter(), { close() {} }) as unknown as fs.FSWatcher;
    vi.spyOn(fs, 'watch').mockImplementation(() => quiet);
    const hub = hubs.open();
    trackRunning(hub, SERVER);
    const output = new FakeEditorOutput(hub.rawPaths(SERVER.name).stdout);
    outputs.push(output);
    output.write('written while the watch was deaf\n');
    await waitFor(() => hub.tail(SERVER.name, 10).length === 1);
    expect(hub.tail(SERVER.name, 10)[0].message).toBe('written while the watch was deaf');
  });

  it('looks at an editor that printed nothing new with one stat a file, and opens nothing', async () => {
    const quiet = Object.assign(new EventEmitter(), { close() {} }) as unknown as fs.FSWatcher;
    vi.spyOn(fs, 'watch').mockImplementation(() => quiet);
    const hub = hubs.open();
    trackRunning(hub, SERVER);
    const { stdout, stderr } = hub.rawPaths(SERVER.name);
    const output = new FakeEditorOutput(stdout);
    outputs.push(output);
    output.write('one line\n');
    await waitFor(() => hub.tail(SERVER.name, 10).length === 1);
    // Read and its offset saved: from now on nothing is left to read.
    await waitFor(() => fs.existsSync(`${stdout}.offset`) && JSON.parse(fs.readFileSync(`${stdout}.offset`, 'utf8')).offset === 9);
    // And the empty stderr read once, with where it ended saved (on a busy machine that may come after stdout's).
    await waitFor(() => !fs.existsSync(stderr) || fs.existsSync(`${stderr}.offset`));
    const opens = vi.spyOn(fs.promises, 'open');
    const stats = vi.spyOn(fs, 'statSync');
    // Three looks of the poll (one every 5 ticks of 50 ms), each a stat of both files.
    await waitFor(() => stats.mock.calls.filter(([file]) => file === stderr).length >= 3);
    expect(opens.mock.calls.filter(([file]) => file === stdout || file === stderr)).toEqual([]);
  });
});
