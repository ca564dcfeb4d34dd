import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { LogHub } from '../../src/logs/hub.ts';
import { FakeEditorOutput, SERVER, useHubs, waitFor, trackRunning } from './fixtures.ts';

describe('a restart of the service', () => {
  const hubs = useHubs();
  let editor: FakeEditorOutput;

  afterEach(() => {
    editor.close();
  });

  const startHub = (): LogHub => {
    const hub = hubs.open();
    trackRunning(hub, SERVER);
    return hub;
  };

  it('reloads the history and goes on reading where it stopped, losing and repeating no line', async () => {
    const first = startHub();
    // The editor outlives the service: one descriptor across both hubs.
    editor = new FakeEditorOutput(first.rawPaths(SERVER.name).stdout);
    for (let i = 0; i < 100; i++) editor.write(`line ${i}\n`);
    await waitFor(() => first.tail(SERVER.name, 1000).length === 100);
    first.event(SERVER.name, 'INFO', 'started');
    await first.close();

    // Written while no service runs, the last one still unfinished.
    for (let i = 100; i < 150; i++) editor.write(`line ${i}\n`);
    editor.write('line 1');

    const second = startHub();
    const reloaded = second.tail(SERVER.name, 1000);
    expect(reloaded.slice(0, 100).map((entry) => entry.message)).toEqual(Array.from({ length: 100 }, (_, i) => `line ${i}`));
    expect(reloaded[100]).toMatchObject({ message: 'started', source: 'controller', serverId: SERVER.id, serverName: SERVER.displayName });
    expect(reloaded[0]).toMatchObject({ level: 'INFO', source: 'server', name: SERVER.name });

    editor.write('50\n');
    await waitFor(() => second.tail(SERVER.name, 1000).length === 152);
    const expected = [...Array.from({ length: 100 }, (_, i) => `line ${i}`), 'started', ...Array.from({ length: 51 }, (_, i) => `line ${100 + i}`)];
    expect(second.tail(SERVER.name, 1000).map((entry) => entry.message)).toEqual(expected);

    await second.untrack(SERVER.name);
    const file = fs.readFileSync(`${second.rawPaths(SERVER.name).dir}/server.log`, 'utf8').trimEnd().split('\n');
    expect(file.map((line) => line.replace(/^\S+ \[\w+\] \[\w+\] /, ''))).toEqual(expected);
  });
});

describe('a server that never ran', () => {
  const hubs = useHubs();

  it('keeps its events: held without a folder, written when the service stops', async () => {
    const first = hubs.open();
    first.track(SERVER);
    first.event(SERVER.name, 'INFO', 'created');
    first.event(SERVER.name, 'WARN', 'a warning');
    expect(first.tail(SERVER.name, 10).map((entry) => entry.message)).toEqual(['created', 'a warning']);
    // Thousands declared at once make no folder each until they run (or the service stops).
    expect(fs.existsSync(first.rawPaths(SERVER.name).dir)).toBe(false);
    await first.close();

    const second = hubs.open();
    second.track(SERVER);
    expect(second.tail(SERVER.name, 10).map((entry) => entry.message)).toEqual(['created', 'a warning']);
  });

  it('has its held events written once its editor runs, and those of a deleted one dropped', async () => {
    const hub = hubs.open();
    hub.track(SERVER);
    hub.event(SERVER.name, 'INFO', 'created');
    trackRunning(hub, SERVER);
    const file = `${hub.rawPaths(SERVER.name).dir}/server.log`;
    await waitFor(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes('created'));

    const other = { ...SERVER, name: 'gone-soon', id: '6f0c2b8e-0d1a-4c4f-9a57-0b7f3f0e8a12' };
    hub.track(other);
    hub.event(other.name, 'INFO', 'created');
    await hub.untrack(other.name, { remove: true });
    expect(fs.existsSync(hub.rawPaths(other.name).dir)).toBe(false);
  });
});
