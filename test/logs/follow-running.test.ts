// Only the output of editors that run is read: a stopped server's files are neither watched nor
// polled (at thousands of declared servers that was most of the service's work at rest), and
// nothing written meanwhile is lost: following starts from the saved offset.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { LogEntry } from '../../src/logs/entry.ts';
import { FakeEditorOutput, OTHER, SERVER, useHubs, waitFor, trackRunning } from './fixtures.ts';

describe('following editor output only while the editor runs', () => {
  const hubs = useHubs();
  const outputs: FakeEditorOutput[] = [];
  afterEach(() => outputs.splice(0).forEach((output) => output.close()));
  const open = (file: string) => {
    const output = new FakeEditorOutput(file);
    outputs.push(output);
    return output;
  };

  it('leaves a stopped server\'s output alone, reads it from its saved offset once followed, and drains it after', async () => {
    const hub = hubs.open();
    const seen: LogEntry[] = [];
    hub.subscribe(null, (entry) => seen.push(entry));
    trackRunning(hub, OTHER);
    const running = open(hub.rawPaths(OTHER.name).stdout);
    // Output left from before (the editor stopped while the service was away) waits in its file.
    const { dir, stdout } = hub.rawPaths(SERVER.name);
    fs.mkdirSync(dir, { recursive: true });
    const stopped = open(stdout);
    stopped.write('written before\n');
    hub.track(SERVER); // stopped: tracked for its events and history, its files not followed
    stopped.write('written while stopped\n');
    // Several rounds of the hub's poll (50 ms here) and watch events go by for the running one.
    for (let round = 0; round < 5; round++) {
      running.write(`round ${round}\n`);
      await waitFor(() => seen.some((e) => e.message === `round ${round}`));
    }
    expect(seen.filter((e) => e.name === SERVER.name)).toEqual([]);

    hub.follow(SERVER.name, 'start');
    // Nothing is lost: following starts from the saved offset.
    await waitFor(() => seen.some((e) => e.name === SERVER.name && e.message === 'written while stopped'));
    hub.unfollow(SERVER.name);
    // Its last lines still come while it drains.
    stopped.write('last words\n');
    await waitFor(() => seen.some((e) => e.message === 'last words'));
    expect(seen.filter((e) => e.name === SERVER.name).map((e) => e.message)).toEqual(['written before', 'written while stopped', 'last words']);
  });
});
