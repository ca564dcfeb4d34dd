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
