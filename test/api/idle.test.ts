// Idle autostop and wake on open, against the running service and the stub editor (whose
// /healthz heartbeat behaves like code-server's, and is not activity): short timeouts set in
// hand-written manifests.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Reconciled } from '../../src/index/server-index.ts';
import { opened } from '../helpers/net.ts';
import { extensionHostCall, protocolMessage } from '../helpers/vscode-messages.ts';
import { eventually, portRange, processExists, runningEditors, startTestService, type TestService } from '../helpers/service.ts';
import { writeWhole } from '../templates/fixtures.ts';
import { nextCall } from '../helpers/wait.ts';

const ALICE = { 'X-Forwarded-Email': 'alice@example.com' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com' };

let service: TestService;

beforeAll(async () => {
  // A server without spec.idleTimeoutSeconds gets the config's 2 s; `owner` access, so identity headers count.
  service = await startTestService({ config: { access: 'owner', editor: { idleTimeoutSeconds: 2, readyTimeoutSeconds: 15 } } });
});
afterAll(async () => {
  await service?.stop();
});

const file = (s: TestService, name: string) => `${s.settings.manifestsDir}/${name}.yaml`;
const byManifest = async (s: TestService, name: string) =>
  (await s.request('GET', '/servers')).body.find((r: { manifest: string }) => r.manifest === name);

/** Writes a manifest by hand (spec.idleTimeoutSeconds when given) and waits until its editor runs. */
async function runningServer(s: TestService, name: string, idleTimeoutSeconds?: number, owner?: string) {
  await fs.writeFile(file(s, name), [
    'apiVersion: devbox.dev/v1alpha1',
    'kind: EditorServer',
    'metadata:',
    `  name: ${name}`,
    ...(owner ? ['  annotations:', `    devbox.dev/owner: ${owner}`] : []),
    'spec:',
    `  displayName: ${name}`,
    '  running: true',
    ...(idleTimeoutSeconds !== undefined ? [`  idleTimeoutSeconds: ${idleTimeoutSeconds}`] : []),
    '',
  ].join('\n'));
  return eventually(async () => {
    const record = await byManifest(s, name);
    return record?.status === 'running' && record.pid ? record : undefined;
  }, 20_000);
}

/** Waits until the controller has stopped the server for idleness. */
const idleStopped = (s: TestService, name: string) =>
  eventually(async () => {
    const record = await byManifest(s, name);
    return record?.status === 'stopped' && record.reason === 'IdleTimeout' ? record : undefined;
  }, 30_000);

/**
 * Resolves once the controller has finished a reconcile of the server that began at `at` (ms
 * since the epoch) or later: one that ran its idle check (ensureIdle) with the clock past `at`.
 */
function checkedAfter(s: TestService, name: string, at: number, timeoutMs = 30_000): Promise<unknown> {
  const onReconciled = (listener: (done: Reconciled) => void) => s.index.on('reconciled', listener);
  return nextCall(onReconciled, ({ name: done, seconds }) => done === name && Date.now() - seconds * 1000 >= at, timeoutMs);
}

/**
 * How often the simulated person acts: their pace, well inside a 2 s idle timeout. Not a wait
 * for anything (what ends the acting is `checkedAfter`), so it stays a fixed interval.
 */
const ACT_EVERY_MS = 250;

/**
 * Does `act` every ACT_EVERY_MS until the controller has checked the server for idleness
 * `timeouts` idle timeouts after the acting began: by then, without the acts, it would have
 * stopped the editor several times over (its last use was at the latest when the acting began).
 */
async function keepDoing(s: TestService, name: string, timeoutSeconds: number, timeouts: number, act: () => Promise<unknown> | void): Promise<void> {
  let done = false;
  const checked = checkedAfter(s, name, Date.now() + timeouts * timeoutSeconds * 1000).finally(() => (done = true));
  while (!done) {
    await act();
    await Promise.race([checked, new Promise((r) => setTimeout(r, ACT_EVERY_MS))]);
  }
  await checked;
}

const open = (port: number, headers: Record<string, string> = {}) =>
  fetch(`${service.url}/vscode/${port}/`, { headers: { accept: 'text/html', ...headers } });

describe('idle autostop', () => {
  it('stops an editor left idle at its timeout and not before, keeping spec.running true', async () => {
    const manifestBefore = async () => fs.readFile(file(service, 'left-idle'), 'utf8');
    const started = await runningServer(service, 'left-idle', 4);
    const written = await manifestBefore();
    // Well before its 4 s: still running.
    expect(processExists(started.pid)).toBe(true);
    expect(started.idle_timeout_seconds).toBe(4);

    const stopped = await idleStopped(service, 'left-idle');
    expect(Date.parse(stopped.idle_stopped_at) - Date.parse(started.start_time)).toBeGreaterThanOrEqual(4000);
    expect(processExists(started.pid)).toBe(false);
    expect(runningEditors(service.settings.dataDir).map((e) => e.name)).not.toContain('left-idle');
    expect(stopped.pid).toBeNull();
    expect(stopped.message).toContain(`open /vscode/${started.port}/`);
    expect(stopped.message).toContain(`POST /servers/${started.id}/start`);
    // The controller never writes the manifest: it still asks for a running editor.
    expect(await manifestBefore()).toBe(written);
    expect(written).toContain('running: true');
    expect(await fs.readFile(`${service.settings.dataDir}/status/left-idle.yaml`, 'utf8')).toMatch(/idleStoppedAt:/);
    // Nothing reached it after its start: the reason names when it was last used, to the second
    // (the timeout is short): its start, or the controller's first look at it just after.
    const reason = /^idle for (\d+) s: no input since (\d\d:\d\d:\d\d) UTC \(idle timeout 4 s\): open \/vscode\//;
    const { events } = (await service.request('GET', `/servers/${started.id}/events`)).body.data;
    const idleEvent = events.find((e: { reason: string }) => e.reason === 'IdleTimeout');
    const [, idleSeconds, clock] = reason.exec(idleEvent.message) ?? [];
    const since = Date.parse(`${started.start_time.slice(0, 11)}${clock}Z`);
    expect(since).toBeGreaterThanOrEqual(Math.floor(Date.parse(started.start_time) / 1000) * 1000);
    expect(since).toBeLessThan(Date.parse(started.start_time) + 3000);
    expect(Number(idleSeconds)).toBeGreaterThanOrEqual(4);
    expect(service.lines.join('\n')).toContain(`server left-idle: idle for ${idleSeconds} s: no input since ${clock} UTC (idle timeout 4 s): stopping it`);
  }, 40_000);

  it('keeps an editor alive while HTTP requests go through the proxy, and stops it once they stop', async () => {
    const started = await runningServer(service, 'busy-http', 2);
    await keepDoing(service, 'busy-http', 2, 3, async () => expect((await fetch(`${service.url}/vscode/${started.port}/`)).status).toBe(200));
    expect((await byManifest(service, 'busy-http')).status).toBe('running');
    expect(processExists(started.pid)).toBe(true);

    await idleStopped(service, 'busy-http');
    expect(processExists(started.pid)).toBe(false);
  }, 40_000);

  it('keeps an editor alive while WebSocket frames pass through the proxy', async () => {
    const started = await runningServer(service, 'busy-socket', 2);
    const socket = await opened(new WebSocket(`${service.url.replace('http', 'ws')}/vscode/${started.port}/socket`));
    try {
      await keepDoing(service, 'busy-socket', 2, 3, () => new Promise<void>((resolve) => {
        socket.once('message', () => resolve());
        socket.send('keystroke');
      }));
      expect((await byManifest(service, 'busy-socket')).status).toBe('running');
      expect(processExists(started.pid)).toBe(true);
    } finally {
      socket.close();
    }
    await idleStopped(service, 'busy-socket');
    expect(processExists(started.pid)).toBe(false);
  }, 40_000);

  it("counts a person's input to VS Code through the proxy, and not keep-alives, acknowledgements or the workbench's own calls", async () => {
    const name = 'vscode-socket';
    const started = await runningServer(service, name, 2);
    const path = '/stable-0123abc?reconnectionToken=5f0c&reconnection=false&skipWebSocketFrames=false';
    const socket = await opened(new WebSocket(`${service.url.replace('http', 'ws')}/vscode/${started.port}${path}`));
    try {
      const send = (type: number, body?: Buffer) => new Promise<void>((resolve) => {
        socket.once('message', () => resolve());
        socket.send(protocolMessage(type, body));
      });
      // A person typing: the document's changes go to the extension host (echoed back by the stub).
      await keepDoing(service, name, 2, 3, () => send(1, extensionHostCall('$acceptModelChanged', '[{"text":"w"}]')));
      expect((await byManifest(service, name)).status).toBe('running');
      // A tab left open: keep-alives (9), acknowledgements (3) and the workbench's own calls, at the same pace, until it is stopped.
      let stopped = false;
      const idle = idleStopped(service, name).finally(() => (stopped = true));
      const sentAt = Date.now();
      const own = extensionHostCall('$onDidTunnelsChange');
      while (!stopped) await Promise.race([idle, send(9).then(() => send(3)).then(() => send(1, own)), new Promise((r) => setTimeout(r, ACT_EVERY_MS))]);
      const record = await idle;
      expect(Date.parse(record.idle_stopped_at)).toBeGreaterThan(sentAt);
      expect(processExists(started.pid)).toBe(false);
    } finally {
      socket.close();
    }
  }, 40_000);

  it("does not count code-server's heartbeat: an editor with a client attached and beating is stopped at its timeout", async () => {
    // The stub's heart beats every 300 ms while a connection is open (code-server's: every minute).
    process.env.STUB_HEARTBEAT_INTERVAL_MS = '300';
    const started = await runningServer(service, 'heartbeat', 3).finally(() => delete process.env.STUB_HEARTBEAT_INTERVAL_MS);
    const name = 'heartbeat';
    // A client attached to the editor itself, as code-server's workbench is, sending nothing.
    const socket = await opened(new WebSocket(`ws://127.0.0.1:${started.port}/`));
    const attachedAt = Date.now();
    try {
      const stopping = idleStopped(service, name);
      // The heart beats after the attach with nothing sent: code-server's word that a client is there.
      await eventually(async () => {
        const health = await fetch(`http://127.0.0.1:${started.port}/healthz`).then((r) => r.json()) as { lastHeartbeat: number };
        return health.lastHeartbeat > attachedAt + 600;
      }, 5000);
      const stopped = await stopping;
      expect(processExists(started.pid)).toBe(false);
      expect(Date.parse(stopped.idle_stopped_at) - Date.parse(started.start_time)).toBeGreaterThanOrEqual(3000);
    } finally {
      socket.close();
    }
  }, 40_000);

  it('never stops an editor whose timeout is 0, while one on the config\'s timeout is stopped', async () => {
    const forever = await runningServer(service, 'forever', 0);
    const usual = await runningServer(service, 'usual');
    expect(usual.idle_timeout_seconds).toBeNull();
    await idleStopped(service, 'usual');
    // Idle at least as long as the other, which the config's 2 s stopped.
    expect((await byManifest(service, 'forever')).status).toBe('running');
    expect(processExists(forever.pid)).toBe(true);
  }, 40_000);
});

describe('wake on open', () => {
  it('names the server on its starting page apart from another of the same display name', async () => {
    const started = await runningServer(service, 'twin-a', 2);
    // A second server with the same display name, as two creates of "twin-a" would make.
    await fs.writeFile(file(service, 'twin-b'), ['apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', '  name: twin-b',
      'spec:', '  displayName: twin-a', '  running: false', ''].join('\n'));
    await eventually(() => byManifest(service, 'twin-b'));
    await idleStopped(service, 'twin-a');
    const html = await (await open(started.port)).text();
    expect(html).toContain('Starting twin-a (twin-a)…');
  }, 60_000);

  it('starts an idle-stopped editor when it is opened: a starting page, then the editor', async () => {
    const started = await runningServer(service, 'wake-me', 3);
    await idleStopped(service, 'wake-me');

    const page = await open(started.port);
    expect(page.status).toBe(503);
    expect(page.headers.get('retry-after')).toBe('2');
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('Starting wake-me…');
    expect(html).not.toMatch(/<(link|img)|src=/);

    // The page's polls: the same address with the wake header, until the editor answers it.
    const through = await eventually(async () => {
      const res = await open(started.port, { 'x-devbox-wake': 'poll' });
      const text = await res.text();
      if (res.status === 503) expect(JSON.parse(text).error.code).toBe('EDITOR_STARTING');
      return res.status === 200 ? text : undefined;
    }, 20_000);
    expect(through).toContain('<h1>stub editor</h1>');
    const record = await byManifest(service, 'wake-me');
    expect(record).toMatchObject({ status: 'running', reason: null, idle_stopped_at: null });
    expect(processExists(record.pid)).toBe(true);
    expect(record.pid).not.toBe(started.pid);
    // The audit trail has the start, through the proxy, once (the polls after it woke nothing).
    const starts = (await service.request('GET', `/audit?server=${record.id}&action=start`)).body.entries;
    expect(starts.map((e: { actor: string; door: string; outcome: string; detail: string }) => [e.actor, e.door, e.outcome, e.detail]))
      .toEqual([['local', 'proxy', 'ok', `GET /vscode/${started.port}/ was opened`]]);
  }, 60_000);

  it('answers other requests 503 JSON with Retry-After, and wakes the editor too', async () => {
    const started = await runningServer(service, 'wake-json', 2);
    await idleStopped(service, 'wake-json');
    const res = await fetch(`${service.url}/vscode/${started.port}/api/thing`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.json()).toMatchObject({ status: 'error', error: { code: 'EDITOR_STARTING' } });
    await eventually(async () => (await byManifest(service, 'wake-json')).status === 'running', 20_000);
  }, 60_000);

  it('wakes an idle-stopped editor with POST /servers/{id}/start', async () => {
    const started = await runningServer(service, 'wake-api', 2);
    await idleStopped(service, 'wake-api');
    const res = await service.request('POST', `/servers/${started.id}/start`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(processExists(res.body.data.pid)).toBe(true);
    // Woken, it has a new timeout ahead of it, and is stopped for idleness again after it.
    await idleStopped(service, 'wake-api');
    expect(processExists(res.body.data.pid)).toBe(false);
  }, 60_000);

  it('leaves a server stopped on purpose stopped: 404, as before', async () => {
    const started = await runningServer(service, 'on-purpose', 2);
    await idleStopped(service, 'on-purpose');
    // Stopped by the API after its idle stop: the idle stop no longer holds, the stop does.
    expect((await service.request('POST', `/servers/${started.id}/stop`)).status).toBe(200);
    await eventually(async () => (await byManifest(service, 'on-purpose')).reason === null);
    const res = await open(started.port);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('EDITOR_NOT_FOUND');
    const record = await byManifest(service, 'on-purpose');
    expect(record).toMatchObject({ status: 'stopped', pid: null });
    expect(runningEditors(service.settings.dataDir).map((e) => e.name)).not.toContain('on-purpose');
  }, 60_000);

  it('does not wake another user\'s editor, nor one another site embeds', async () => {
    const started = await runningServer(service, 'alices', 2, 'alice@example.com');
    await idleStopped(service, 'alices');
    const asBob = await open(started.port, BOB);
    expect(asBob.status).toBe(404);
    const embedded = await open(started.port, { ...ALICE, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', accept: 'image/*' });
    expect(embedded.status).toBe(404);
    expect(await byManifest(service, 'alices')).toMatchObject({ status: 'stopped', reason: 'IdleTimeout' });
    expect(runningEditors(service.settings.dataDir).map((e) => e.name)).not.toContain('alices');

    const asAlice = await open(started.port, ALICE);
    expect(asAlice.status).toBe(503);
    await eventually(async () => (await byManifest(service, 'alices')).status === 'running', 20_000);
  }, 60_000);
});

describe('an edit of the config\'s idle timeout', () => {
  it('applies to editors already running: a shorter one stops an idle editor without waiting for the old deadline', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-idle-config-'));
    const configFile = join(root, 'devbox.config.yaml');
    const ports = portRange();
    // No resync to come to it: only the edit can bring the idle check forward.
    const write = (idleTimeoutSeconds: number) => writeWhole(configFile, stringify({
      ports, editor: { idleTimeoutSeconds, readyTimeoutSeconds: 15 }, controller: { resyncSeconds: 3600 },
    }));
    await write(3600);
    const edited = await startTestService({ root, configFile });
    try {
      const started = await runningServer(edited, 'long-nap');
      await write(2);
      await idleStopped(edited, 'long-nap');
      expect(processExists(started.pid)).toBe(false);
    } finally {
      await edited.stop();
    }
  }, 60_000);
});

describe('idle stops across a service restart', () => {
  it('does not start an idle-stopped server when the service starts again', async () => {
    const first = await startTestService({ config: { editor: { idleTimeoutSeconds: 3600 } } });
    let second: TestService | undefined;
    try {
      const started = await runningServer(first, 'napping', 2);
      await idleStopped(first, 'napping');
      await first.close();
      second = await startTestService({ root: first.root, config: { ports: first.settings.config.ports, editor: { idleTimeoutSeconds: 3600 } } });
      // Once the controller has looked at it again, it is still stopped for idleness.
      await second.controller.reconcileNow('napping');
      expect(await byManifest(second, 'napping')).toMatchObject({ status: 'stopped', reason: 'IdleTimeout', pid: null });
      expect(runningEditors(second.settings.dataDir).map((e) => e.name)).not.toContain('napping');
      expect(processExists(started.pid)).toBe(false);
      // Woken through the API, it starts.
      const res = await second.request('POST', `/servers/${started.id}/start`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(processExists(res.body.data.pid)).toBe(true);
    } finally {
      if (second) await second.stop();
      else await first.stop();
    }
  }, 60_000);
});
