// Shared by the log tests: a temporary logs folder, a hub on it, a stand-in editor writing its
// output files the way the runtime sets them up (O_APPEND), and a real HTTP server for the streams.

import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { LogHub, type LogHubOptions } from '../../src/logs/hub.ts';
import { LogStreamServer, type LogStreamOptions } from '../../src/logs/stream.ts';
import { eventually } from '../helpers/wait.ts';
import { afterEach, beforeEach } from 'vitest';
import type { WebSocket } from 'ws';

export const SERVER = { name: 'data-pipeline', id: '5f0c2b8e-0d1a-4c4f-9a57-0b7f3f0e8a11', displayName: 'Data pipeline' };
export const OTHER = { name: 'notebook', id: '9a1d7c3e-5b2f-4e8a-8c6d-2f4e6a8b0c1d', displayName: 'Notebook' };

function makeLogsDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'devbox-logs-'));
}

function makeHub(logsDir: string, options: Partial<LogHubOptions> = {}): LogHub {
  return new LogHub({ logsDir, pollIntervalMs: 50, ...options });
}

/** A fresh logs folder for each test, and hubs on it that are closed, and the folder removed, after it. */
export function useHubs(): { open(options?: Partial<LogHubOptions>): LogHub } {
  let logsDir = '';
  let hubs: LogHub[] = [];
  beforeEach(() => {
    logsDir = makeLogsDir();
    hubs = [];
  });
  afterEach(async () => {
    for (const hub of hubs) await hub.close();
    fs.rmSync(logsDir, { recursive: true, force: true });
  });
  return {
    open(options = {}) {
      const hub = makeHub(logsDir, options);
      hubs.push(hub);
      return hub;
    },
  };
}

/** An editor's view of its output file: one descriptor opened with O_APPEND, kept open. */
export class FakeEditorOutput {
  readonly #fd: number;

  constructor(file: string) {
    this.#fd = fs.openSync(file, 'a');
  }

  write(text: string): void {
    fs.writeSync(this.#fd, text);
  }

  close(): void {
    fs.closeSync(this.#fd);
  }
}

/** Tracks the server with its editor running, as the service does once its status names one: its output is followed. */
export function trackRunning(hub: LogHub, server: Parameters<LogHub['track']>[0]): void {
  hub.track(server);
  hub.follow(server.name, 'start');
}

/**
 * Polls (eventually, every 10 ms) until the condition holds; the hub works on file events, so
 * tests wait for outcomes.
 */
export async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  await eventually(condition, timeoutMs, 10);
}

/** A real HTTP server whose upgrades go to a LogStreamServer; returns its ws:// base. */
export async function startStreams(
  hub: LogHub,
  resolve: (id: string) => { name: string } | undefined,
  options: LogStreamOptions = {},
): Promise<{ base: string; streams: LogStreamServer; close: () => Promise<void> }> {
  const streams = new LogStreamServer(hub, resolve, options);
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  server.on('upgrade', (req, socket, head) => {
    if (!streams.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    base: `ws://127.0.0.1:${port}`,
    streams,
    close: async () => {
      await streams.close();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

type Streams = Awaited<ReturnType<typeof startStreams>>;

/**
 * A fresh hub tracking `servers` and log streams over it for each test of the calling describe
 * block, torn down after it with every socket the test pushed onto `sockets`.
 */
export function useLogStreams(setup: {
  servers?: Array<typeof SERVER>;
  hubOptions?: Partial<LogHubOptions>;
  streamOptions?: LogStreamOptions;
  /** Runs after the servers are tracked and before the streams start. */
  before?: (hub: LogHub) => void;
} = {}): { hub: LogHub; streams: Streams; sockets: WebSocket[] } {
  const hubs = useHubs();
  const ctx = {} as { hub: LogHub; streams: Streams; sockets: WebSocket[] };
  beforeEach(async () => {
    const servers = setup.servers ?? [SERVER];
    ctx.hub = hubs.open(setup.hubOptions);
    for (const server of servers) trackRunning(ctx.hub, server);
    setup.before?.(ctx.hub);
    const byId = new Map(servers.map((server) => [server.id, server]));
    ctx.streams = await startStreams(ctx.hub, (id) => byId.get(id), setup.streamOptions);
    ctx.sockets = [];
  });
  afterEach(async () => {
    for (const socket of ctx.sockets) socket.terminate();
    await ctx.streams.close();
  });
  return ctx;
}
