// The log hub for a runtime that writes no output files here (an editor in a Pod): each server's
// output is read from the runtime's log stream while its editor runs, into the same history,
// server.log, subscribers and WebSocket frames as output files give, with the same rate limit.
// The runtime is the test FakeRuntime, whose logs() behaves as a Pod's log does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LogEntry } from '../../src/logs/entry.ts';
import type { LogHub, LogHubOptions } from '../../src/logs/hub.ts';
import type { EditorOutputSource } from '../../src/logs/stream-capture.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { FakeRuntime } from '../helpers/fakes.ts';
import { opened } from '../helpers/net.ts';
import { SERVER, startStreams, useHubs, waitFor } from './fixtures.ts';

let dataDir: string;
let runtime: FakeRuntime;
const hubs = useHubs();

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'devbox-stream-logs-'));
  runtime = new FakeRuntime(new DataLayout(dataDir));
});
afterEach(async () => {
  await runtime.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A hub reading the fake runtime's log streams, tracking SERVER. */
function openHub(options: Partial<LogHubOptions> = {}): LogHub {
  const hub = hubs.open({ output: (name, o) => runtime.logs(name, o), ...options });
  hub.track(SERVER);
  return hub;
}

const messages = (hub: LogHub) => hub.tail(SERVER.name, 100).map((e) => `${e.level} ${e.source} ${e.message}`);
const serverLog = (hub: LogHub) => fs.readFileSync(path.join(hub.rawPaths(SERVER.name).dir, 'server.log'), 'utf8');
const start = () => runtime.start({ name: SERVER.name, port: 8010 });

describe('output from a runtime\'s log stream', () => {
  it('gives a started editor\'s whole output, stdout as INFO and stderr as WARN, into the history and server.log, with no output files', async () => {
    const hub = openHub();
    await start();
    runtime.print(SERVER.name, 'code-server starting');
    hub.follow(SERVER.name, 'start');
    runtime.print(SERVER.name, 'HTTP server listening on http://0.0.0.0:8080/');
    runtime.print(SERVER.name, 'extension host crashed', 'stderr');
    await waitFor(() => messages(hub).length === 3);
    expect(messages(hub)).toEqual([
      'INFO server code-server starting',
      'INFO server HTTP server listening on http://0.0.0.0:8080/',
      'WARN server extension host crashed',
    ]);
    await waitFor(() => serverLog(hub).includes('extension host crashed'));
    expect(serverLog(hub)).toMatch(/^\S+Z \[INFO\] \[server\] code-server starting\n/);
    const { stdout, stderr } = hub.rawPaths(SERVER.name);
    expect(fs.existsSync(stdout) || fs.existsSync(stderr)).toBe(false);
  });

  it('gives only what an adopted editor prints from then on (since now)', async () => {
    const hub = openHub();
    await start();
    runtime.print(SERVER.name, 'before the service came back');
    hub.follow(SERVER.name, 'now');
    await new Promise((resolve) => setTimeout(resolve, 50));
    runtime.print(SERVER.name, 'after');
    await waitFor(() => messages(hub).length > 0);
    expect(messages(hub)).toEqual(['INFO server after']);
  });

  it('keeps a crashed editor\'s last lines, and follows the next editor from its start', async () => {
    const hub = openHub();
    await start();
    hub.follow(SERVER.name, 'start');
    runtime.print(SERVER.name, 'fatal: out of memory', 'stderr');
    await runtime.crash(SERVER.name);
    hub.unfollow(SERVER.name);
    await waitFor(() => messages(hub).includes('WARN server fatal: out of memory'));

    // Restarted before the last stream was closed: the same reading carries on into the next editor.
    await start();
    runtime.print(SERVER.name, 'second life');
    hub.follow(SERVER.name, 'start');
    await waitFor(() => messages(hub).includes('INFO server second life'));
    expect(messages(hub)).toEqual(['WARN server fatal: out of memory', 'INFO server second life']);
  });

  it('reads nothing while no editor is followed', async () => {
    let opened = 0;
    const source: EditorOutputSource = (name, options) => {
      opened++;
      return runtime.logs(name, options);
    };
    const hub = openHub({ output: source });
    await start();
    runtime.print(SERVER.name, 'nobody reads this yet');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(opened).toBe(0);
    expect(messages(hub)).toEqual([]);
  });

  it('holds a flood to the rate limit as output files do: every line in server.log, the rest counted and reported by a marker', async () => {
    const hub = openHub({ rateLimit: { linesPerSec: 10, burst: 10 }, clock: () => Date.parse('2026-11-22T06:00:00.000Z') });
    await start();
    for (let i = 0; i < 50; i++) runtime.print(SERVER.name, `line ${i}`);
    hub.follow(SERVER.name, 'start');
    await waitFor(() => hub.tail(SERVER.name, 100).some((e) => / dropped \(rate limit /.test(e.message)));
    const tail = hub.tail(SERVER.name, 100);
    expect(tail.slice(0, 10).map((e) => e.message)).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i}`));
    expect(tail.slice(10).map((e) => `${e.level} ${e.source} ${e.message}`)).toEqual(['WARN controller … 40 lines dropped (rate limit 10 lines/s)']);
    expect(hub.dropped(SERVER.name)).toBe(40);
    expect(hub.state.lines_dropped).toBe(40);
    await waitFor(() => serverLog(hub).includes('line 49'));
    expect(serverLog(hub).split('\n').filter((l) => / \[server\] line \d+$/.test(l))).toHaveLength(50);
  });

  it('opens a failed stream again, says the failure once, and stops reading when the server is untracked', async () => {
    const failures: string[] = [];
    let calls = 0;
    const source: EditorOutputSource = async function* (name, options) {
      calls++;
      if (calls <= 2) throw new Error('the cluster does not answer');
      yield* runtime.logs(name, options);
    };
    const hub = openHub({ output: source, log: (message) => failures.push(message) });
    await start();
    hub.follow(SERVER.name, 'start');
    runtime.print(SERVER.name, 'came through');
    await waitFor(() => messages(hub).includes('INFO server came through'), 8000);
    expect(failures).toEqual([`logs: ${SERVER.name}: the cluster does not answer`]);
    await hub.untrack(SERVER.name);
    runtime.print(SERVER.name, 'after untrack');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(hub.tail(SERVER.name, 10)).toEqual([]);
  });

  it('ends a stream whose source does not heed the signal when the hub closes', async () => {
    const hub = openHub({ output: async function* () {
      await new Promise(() => {}); // never yields, never ends
    } });
    hub.follow(SERVER.name, 'start');
    await hub.close();
  });

  it('sends the lines as the interface\'s log messages over the WebSocket stream', async () => {
    const hub = openHub();
    const streams = await startStreams(hub, (id) => (id === SERVER.id ? SERVER : undefined));
    const socket = new WebSocket(`${streams.base}/ws/logs/${SERVER.id}`);
    try {
      const frames: LogEntry[] = [];
      socket.on('message', (data) => frames.push(JSON.parse(String(data))));
      await opened(socket);
      await start();
      hub.follow(SERVER.name, 'start');
      runtime.print(SERVER.name, 'over the wire');
      await waitFor(() => frames.some((f) => f.message === 'over the wire'));
      expect(frames.find((f) => f.message === 'over the wire')).toMatchObject({
        type: 'log', server_id: SERVER.id, server_name: SERVER.displayName, level: 'INFO', source: 'server',
      });
    } finally {
      socket.terminate();
      await streams.close();
    }
  });
});
