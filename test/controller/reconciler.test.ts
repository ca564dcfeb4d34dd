// reconcile(name) against a real manifest store, data layout and port allocator in a temp folder,
// with a fake runtime (editors in memory, storage on disk), logs and extension installs.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { DEFAULT_CONFIG, type Config } from '../../src/config/settings.ts';
import type { ReconcileContext } from '../../src/controller/context.ts';
import { Controller, reconcileQueue } from '../../src/controller/controller.ts';
import { PortAllocator } from '../../src/controller/ports.ts';
import { WorkQueue } from '../../src/controller/queue.ts';
import type { Reconciler } from '../../src/controller/reconciler.ts';
import type { ServerTable } from '../../src/index/server-table.ts';
import { ManifestStore } from '../../src/manifests/store.ts';
import { routableEndpoint } from '../../src/proxy/routable.ts';
import { RESTARTED_AT, type EditorServer, type EditorServerSpec, type EditorServerStatus } from '../../src/manifests/types.ts';
import type { ExitInfo } from '../../src/runtime/interface.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { FakeClock, FakeInstaller, FakeLogs, FakeRuntime } from '../helpers/fakes.ts';
import { depsOf, indexFor, reconcilerFor } from '../helpers/reconciler.ts';
import { eventually } from '../helpers/wait.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let root: string;
let config: Config;
let store: ManifestStore;
let layout: DataLayout;
let runtime: FakeRuntime;
let logs: FakeLogs;
let installer: FakeInstaller;
let ports: PortAllocator;
/** Every name the reconciler put back on the queue, in order. */
let enqueued: string[];
let reconciler: Reconciler;
/** The index the reconciler writes, and its parts. */
let table: ServerTable;
let parts: ReconcileContext;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'devbox-reconciler-'));
  // A block of its own below the ephemeral range, away from the integration tests' 20000+.
  const min = 10_000 + Math.floor(Math.random() * 400) * 20;
  config = structuredClone(DEFAULT_CONFIG);
  config.ports = { min, max: min + 19 };
  config.editor = { startTimeoutSeconds: 5, readyTimeoutSeconds: 5, stopGraceSeconds: 1, maxRestartBackoffSeconds: 60, crashLoopRestarts: 3, idleTimeoutSeconds: 0 };
  config.extensionGroups = { python: { name: 'python', description: '', extensions: ['ms-python.python'], user_settings: {} } };
  layout = new DataLayout(join(root, 'data'));
  store = new ManifestStore(join(root, 'manifests'), layout.statusDir);
  await mkdir(store.dir);
  installer = new FakeInstaller();
  runtime = new FakeRuntime(layout, installer);
  logs = new FakeLogs(join(root, 'data', 'logs'));
  ports = new PortAllocator(config.ports);
  enqueued = [];
  ({ reconciler, table, parts } = reconcilerFor({
    store, runtime, ports, layout, logs, config,
    enqueue: (name) => enqueued.push(name),
    log: () => undefined,
  }));
});

afterEach(async () => {
  vi.useRealTimers();
  await runtime.close();
  await rm(root, { recursive: true, force: true });
});

/** Writes a manifest the way a person would: by hand, with a comment. */
async function writeManifest(name: string, spec: Partial<EditorServerSpec> = {}): Promise<string> {
  const manifest = {
    apiVersion: 'devbox.dev/v1alpha1',
    kind: 'EditorServer',
    metadata: { name },
    spec: { displayName: `Editor ${name}`, running: false, ...spec },
  };
  const text = `# ${name}: written by hand\n${stringify(manifest)}`;
  await writeFile(store.fileOf(name), text);
  return text;
}

async function serverOf(name: string): Promise<EditorServer> {
  const read = await store.read(name);
  if (read.kind !== 'ok') throw new Error(`${name} is ${read.kind}`);
  return read.server;
}

async function statusOf(name: string): Promise<EditorServerStatus> {
  const status = (await serverOf(name)).status;
  if (!status) throw new Error(`${name} has no status`);
  return status;
}

/** Changes the spec or metadata the way the API does. */
async function edit(name: string, path: string[], value: unknown): Promise<void> {
  expect(await store.update(name, (doc) => {
    doc.setIn(path, value);
  })).toBe('updated');
}

/** Waits for the background /healthz probe started by the last reconcile to report back. */
async function probeReported(name: string, since: number): Promise<void> {
  await eventually(() => enqueued.slice(since).includes(name), 5000, 10);
}

/** Reconciles a running: true manifest until its editor answers /healthz and status says Running. */
async function startRunning(name: string, spec: Partial<EditorServerSpec> = {}): Promise<EditorServerStatus> {
  await writeManifest(name, { running: true, ...spec });
  const mark = enqueued.length;
  await reconciler.reconcile(name);
  expect((await statusOf(name)).phase).toBe('Starting');
  await probeReported(name, mark);
  await reconciler.reconcile(name);
  const status = await statusOf(name);
  expect(status.phase).toBe('Running');
  return status;
}

describe('reconcile', () => {
  it('gives a new manifest a uid, a port and a workspace, reports it Stopped, and keeps the comment', async () => {
    const text = await writeManifest('fresh');
    expect(await reconciler.reconcile('fresh')).toBeUndefined();

    const server = await serverOf('fresh');
    expect(server.metadata.uid).toMatch(UUID);
    expect(server.status).toMatchObject({ phase: 'Stopped', runtimeRef: null, port: config.ports.min, workspacePath: layout.workspace('fresh') });
    expect(ports.portOf('fresh')).toBe(config.ports.min);
    expect(existsSync(layout.workspace('fresh'))).toBe(true);
    // The editor's own folders come with its first start.
    expect(existsSync(layout.editor('fresh').userDataDir)).toBe(false);
    // The file is the operator's: neither uid nor status is written into it.
    expect(await readFile(store.fileOf('fresh'), 'utf8')).toBe(text);
    expect(runtime.launches).toEqual([]);
    expect(table.nameOfUid(server.metadata.uid!)).toBe('fresh');
  });

  it('keeps the uid and port it gave on the next reconcile, and does not rewrite the file', async () => {
    await writeManifest('steady');
    await reconciler.reconcile('steady');
    const text = await readFile(store.fileOf('steady'), 'utf8');
    await reconciler.reconcile('steady');
    expect(await readFile(store.fileOf('steady'), 'utf8')).toBe(text);
  });

  it('launches a running server once, reports Running when it answers /healthz, and launches nothing more', async () => {
    await writeManifest('web', { running: true });
    const mark = enqueued.length;
    await reconciler.reconcile('web');
    const starting = await statusOf('web');
    expect(runtime.launches).toHaveLength(1);
    const [launch] = runtime.launches;
    expect(starting).toMatchObject({ phase: 'Starting', runtimeRef: runtime.alive('web')[0], port: launch.port });
    // The runtime is asked for the server (its name and uid), its port and the config's default resources; its storage (workspace, editor data) is prepared first.
    const uid = table.serverNamed('web')?.metadata.uid;
    expect(uid).toMatch(UUID);
    expect(launch).toEqual({ name: 'web', uid, port: starting.port, resources: config.runtime.kubernetes.resources });
    expect(starting.workspacePath).toBe(layout.workspace('web'));
    expect(existsSync(layout.editor('web').userDataDir)).toBe(true);
    expect(existsSync(layout.editor('web').extensionsDir)).toBe(true);

    await probeReported('web', mark);
    await reconciler.reconcile('web');
    const running = await statusOf('web');
    expect(running).toMatchObject({ phase: 'Running', runtimeRef: starting.runtimeRef, startTime: starting.startTime });
    expect(runtime.answers(running.port!)).toBe(true);
    expect(routableEndpoint(table, ports, running.port!)).toEqual({ host: '127.0.0.1', port: running.port });

    const text = await readFile(store.fileOf('web'), 'utf8');
    await reconciler.reconcile('web');
    await reconciler.reconcile('web');
    expect(runtime.launches).toHaveLength(1);
    expect(await readFile(store.fileOf('web'), 'utf8')).toBe(text);
  });

  it('reports Starting, and launches nothing more, while the editor has not answered yet', async () => {
    runtime.answersHealth = false;
    await writeManifest('slow', { running: true });
    await reconciler.reconcile('slow');
    await reconciler.reconcile('slow');
    await reconciler.reconcile('slow');
    expect(runtime.launches).toHaveLength(1);
    expect((await statusOf('slow')).phase).toBe('Starting');

    await edit('slow', ['spec', 'running'], false); // also ends the background probe
    await reconciler.reconcile('slow');
    expect((await statusOf('slow')).phase).toBe('Stopped');
  });

  it('reports Failed/Unhealthy when a live editor does not answer /healthz within the start timeout', async () => {
    config.editor.readyTimeoutSeconds = 0.3;
    runtime.answersHealth = false;
    await writeManifest('mute', { running: true });
    await reconciler.reconcile('mute');
    await probeReported('mute', 0);
    await reconciler.reconcile('mute');
    const status = await statusOf('mute');
    expect(status).toMatchObject({ phase: 'Failed', reason: 'Unhealthy', runtimeRef: runtime.alive('mute')[0] });
    expect(status.message).toContain('/healthz');
    expect(runtime.launches).toHaveLength(1);
  });

  it.each([
    [{ code: 1, signal: null }, 'Crashed'],
    [{ code: null, signal: 'SIGKILL' }, 'Crashed'],
    [{ code: 0, signal: null }, 'Exited'],
  ] as Array<[ExitInfo, string]>)('records an exit %j under restartPolicy Never as Failed/%s and never relaunches', async (exit, reason) => {
    await startRunning('once');
    const mark = enqueued.length;
    await runtime.crash('once', exit);
    expect(enqueued.slice(mark)).toContain('once');

    expect(await reconciler.reconcile('once')).toBeUndefined();
    const status = await statusOf('once');
    expect(status).toMatchObject({ phase: 'Failed', reason, runtimeRef: null, lastExit: { code: exit.code, signal: exit.signal } });
    expect(status).not.toHaveProperty('pid');

    await reconciler.reconcile('once');
    await reconciler.reconcile('once');
    expect(runtime.launches).toHaveLength(1);
    expect((await statusOf('once')).reason).toBe(reason);
  });

  it('waits for the exit of an editor that died but is not reaped yet, so status names the signal', async () => {
    await startRunning('zombie');
    const dead = await runtime.die('zombie');
    expect(await reconciler.reconcile('zombie')).toEqual({ requeueAfterMs: expect.any(Number), waiting: true });
    expect((await statusOf('zombie')).runtimeRef).toEqual(dead); // nothing recorded from half the story

    const mark = enqueued.length;
    runtime.reap(dead, { code: null, signal: 'SIGKILL' });
    expect(enqueued.slice(mark)).toContain('zombie');
    await reconciler.reconcile('zombie');
    expect(await statusOf('zombie')).toMatchObject({
      phase: 'Failed', reason: 'Crashed', runtimeRef: null, message: 'code-server killed by SIGKILL', lastExit: { signal: 'SIGKILL' },
    });
  });

  it('lets a refresh (reconcileNow) finish only after the run that records the exit, not one that waited for it', async () => {
    await startRunning('refreshed');
    // A controller started on the same folder and runtime: it adopts the running editor.
    const queue = reconcileQueue(1, () => undefined);
    const deps = depsOf({ store, runtime, ports: new PortAllocator(config.ports), layout, logs, config, enqueue: (name) => queue.add(name), log: () => undefined });
    const { table: own, identities } = indexFor(deps);
    const controller = new Controller({
      deps, table: own, identities, queue, resyncMs: 3_600_000, stopGraceMs: 1000, log: () => undefined,
    });
    await controller.start();
    try {
      await eventually(() => expect(own.editorOf('refreshed')).toBeDefined());
      const dead = await runtime.die('refreshed');
      const reaped = new Promise<void>((resolve) => setTimeout(() => resolve(runtime.reap(dead, { code: null, signal: 'SIGKILL' })), 200));
      await controller.reconcileNow('refreshed', 10_000);
      expect(await statusOf('refreshed')).toMatchObject({ phase: 'Failed', reason: 'Crashed', message: 'code-server killed by SIGKILL' });
      await reaped;
    } finally {
      await controller.stop();
    }
  });

  it('records a death whose exit never comes after a bounded wait, without a code', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    await startRunning('lost');
    await runtime.die('lost');
    expect(await reconciler.reconcile('lost')).toEqual({ requeueAfterMs: expect.any(Number), waiting: true });
    vi.advanceTimersByTime(1500);
    expect(await reconciler.reconcile('lost')).toBeUndefined();
    expect(await statusOf('lost')).toMatchObject({ phase: 'Failed', reason: 'Crashed', runtimeRef: null, message: 'code-server exited' });
  });

  it('relaunches under OnFailure after a growing backoff, and reports CrashLoopBackOff after crashLoopRestarts crashes', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-22T06:00:00Z'));
    const later = (ms: number) => vi.setSystemTime(Date.now() + ms);

    await writeManifest('flaky', { running: true, restartPolicy: 'OnFailure' });
    await reconciler.reconcile('flaky');
    expect(runtime.launches).toHaveLength(1);

    // First crash: back off 1 s, and not a moment less.
    await runtime.crash('flaky');
    expect(await reconciler.reconcile('flaky')).toEqual({ requeueAfterMs: 1000 });
    expect(await statusOf('flaky')).toMatchObject({ phase: 'Starting', reason: 'BackOff', runtimeRef: null, restarts: 1, lastExit: { code: 1 } });
    later(999);
    expect(await reconciler.reconcile('flaky')).toEqual({ requeueAfterMs: 1 });
    expect(runtime.launches).toHaveLength(1);
    later(1);
    await reconciler.reconcile('flaky');
    expect(runtime.launches).toHaveLength(2);
    expect(await statusOf('flaky')).toMatchObject({ phase: 'Starting', runtimeRef: runtime.alive('flaky')[0] });

    // Second crash: 2 s.
    await runtime.crash('flaky');
    expect(await reconciler.reconcile('flaky')).toEqual({ requeueAfterMs: 2000 });
    expect(await statusOf('flaky')).toMatchObject({ phase: 'Starting', reason: 'BackOff', restarts: 2 });
    later(2000);
    await reconciler.reconcile('flaky');
    expect(runtime.launches).toHaveLength(3);

    // Third crash within the window: a crash loop, reported as Failed, still retried after 4 s.
    await runtime.crash('flaky');
    expect(await reconciler.reconcile('flaky')).toEqual({ requeueAfterMs: 4000 });
    const looping = await statusOf('flaky');
    expect(looping).toMatchObject({ phase: 'Failed', reason: 'CrashLoopBackOff', runtimeRef: null, restarts: 3 });
    expect(looping.message).toContain('3 crashes');
    later(3000);
    await reconciler.reconcile('flaky');
    expect(runtime.launches).toHaveLength(3);
    later(1000);
    const mark = enqueued.length;
    await reconciler.reconcile('flaky');
    expect(runtime.launches).toHaveLength(4);
    await probeReported('flaky', mark);
  });

  it('does not restart a clean exit under OnFailure, and restarts it under Always', async () => {
    await startRunning('clean', { restartPolicy: 'OnFailure' });
    await runtime.crash('clean', { code: 0, signal: null });
    await reconciler.reconcile('clean');
    expect(await statusOf('clean')).toMatchObject({ phase: 'Failed', reason: 'Exited' });

    await startRunning('always', { restartPolicy: 'Always' });
    await runtime.crash('always', { code: 0, signal: null });
    expect(await reconciler.reconcile('always')).toEqual({ requeueAfterMs: 1000 });
    expect(await statusOf('always')).toMatchObject({ phase: 'Starting', reason: 'BackOff', restarts: 1 });
  });

  it('stops and relaunches the editor once for a restart annotation', async () => {
    const before = await startRunning('again');
    const [old] = runtime.alive('again');
    const restartedAt = '2026-11-22T06:00:00Z';
    await edit('again', ['metadata', 'annotations', RESTARTED_AT], restartedAt);

    const mark = enqueued.length;
    await reconciler.reconcile('again');
    expect(runtime.stops).toEqual([old]);
    expect(runtime.isAlive(old)).toBe(false);
    expect(runtime.launches).toHaveLength(2);
    const [fresh] = runtime.alive('again');
    const status = await statusOf('again');
    expect(status).toMatchObject({ phase: 'Starting', runtimeRef: fresh, port: before.port, observedRestartedAt: restartedAt, restarts: 1 });

    await probeReported('again', mark);
    await reconciler.reconcile('again');
    await reconciler.reconcile('again');
    expect(await statusOf('again')).toMatchObject({ phase: 'Running', runtimeRef: fresh });
    expect(runtime.launches).toHaveLength(2);
    expect(runtime.stops).toHaveLength(1);
  });

  it('starts a server left Failed by a crash again when a restart is requested', async () => {
    await startRunning('revive');
    await runtime.crash('revive');
    await reconciler.reconcile('revive');
    expect((await statusOf('revive')).phase).toBe('Failed');

    await edit('revive', ['metadata', 'annotations', RESTARTED_AT], '2026-11-22T07:00:00Z');
    const mark = enqueued.length;
    await reconciler.reconcile('revive');
    expect(runtime.launches).toHaveLength(2);
    expect(await statusOf('revive')).toMatchObject({ phase: 'Starting', runtimeRef: runtime.alive('revive')[0], restarts: 1 });
    await probeReported('revive', mark);
  });

  it('moves a running editor to the spec.port of a manifest replaced without status, keeping its uid', async () => {
    const before = await startRunning('replaced');
    const { uid } = (await serverOf('replaced')).metadata;
    const next = config.ports.min + 11;
    await writeManifest('replaced', { running: true, port: next });

    const mark = enqueued.length;
    await reconciler.reconcile('replaced');
    expect(runtime.launches.map((l) => l.port)).toEqual([before.port, next]);
    expect(runtime.alive('replaced')).toHaveLength(1);
    expect(await serverOf('replaced')).toMatchObject({ metadata: { uid }, status: { phase: 'Starting', port: next } });
    expect(ports.owner(next)).toBe('replaced');
    await probeReported('replaced', mark);
  });

  it('moves a running editor to a changed spec.port by restarting it there, and frees the old port', async () => {
    const before = await startRunning('mover');
    const [old] = runtime.alive('mover');
    const next = config.ports.min + 10;
    await edit('mover', ['spec', 'port'], next);

    const mark = enqueued.length;
    await reconciler.reconcile('mover');
    expect(runtime.stops).toEqual([old]);
    expect(runtime.launches.map((l) => l.port)).toEqual([before.port, next]);
    expect(await statusOf('mover')).toMatchObject({ phase: 'Starting', port: next, runtimeRef: runtime.alive('mover')[0] });
    expect(ports.owner(before.port!)).toBeUndefined();
    expect(ports.owner(next)).toBe('mover');
    await probeReported('mover', mark);
  });

  it('stops the editor when spec.running turns false, and reports Stopped', async () => {
    const running = await startRunning('halt');
    const [identity] = runtime.alive('halt');
    await edit('halt', ['spec', 'running'], false);

    await reconciler.reconcile('halt');
    expect(runtime.stops).toEqual([identity]);
    expect(runtime.alive('halt')).toEqual([]);
    const status = await statusOf('halt');
    expect(status).toMatchObject({ phase: 'Stopped', runtimeRef: null, port: running.port });
    expect(status.startTime).toBeUndefined();
    expect(runtime.answers(running.port!)).toBe(false);

    await reconciler.reconcile('halt');
    expect(runtime.stops).toHaveLength(1);
    expect(runtime.launches).toHaveLength(1);
    expect((await statusOf('halt')).phase).toBe('Stopped');
  });

  it('leaves the running editor alone while its manifest is invalid, records every problem, and resumes when fixed', async () => {
    await startRunning('typo');
    const good = await readFile(store.fileOf('typo'), 'utf8');
    const bad = good.replace('running: true', 'running: yes please\n  colour: red');
    await writeFile(store.fileOf('typo'), bad);

    expect(await reconciler.reconcile('typo')).toBeUndefined();
    const record = table.records.get('typo')!;
    // Each problem says where: file:line:column.
    expect(record.problems).toEqual([`${store.fileOf('typo')}:9:3: spec: unknown field "colour"`, `${store.fileOf('typo')}:8:12: spec.running: must be boolean`]);
    expect(record.server?.status?.phase).toBe('Running'); // the last valid state stays visible
    expect(runtime.alive('typo')).toHaveLength(1);
    expect(runtime.stops).toEqual([]);
    expect(await readFile(store.fileOf('typo'), 'utf8')).toBe(bad);
    expect(logs.events).toContainEqual(expect.objectContaining({ name: 'typo', level: 'ERROR', message: expect.stringContaining('manifest is invalid') }));

    await writeFile(store.fileOf('typo'), good);
    await reconciler.reconcile('typo');
    expect(table.records.get('typo')!.problems).toBeUndefined();
    expect((await statusOf('typo')).phase).toBe('Running');
    expect(runtime.launches).toHaveLength(1);
  });

  it('records the problems of a manifest that was never valid, and launches nothing', async () => {
    await writeFile(store.fileOf('never'), 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: not-never\nspec:\n  running: true\n');
    await reconciler.reconcile('never');
    expect(table.records.get('never')).toEqual({ name: 'never', problems: [`${store.fileOf('never')}:4:9: metadata.name: "not-never" must equal the file name "never"`] });
    expect(runtime.launches).toEqual([]);
  });

  it('keeps the editor, its files, uid and port while the file is missing, and does nothing when it comes back', async () => {
    const status = await startRunning('saved');
    const [identity] = runtime.alive('saved');
    const { uid } = (await serverOf('saved')).metadata;
    const text = await readFile(store.fileOf('saved'), 'utf8');
    await rm(store.fileOf('saved'));

    const result = await reconciler.reconcile('saved');
    expect(result?.requeueAfterMs).toBeGreaterThan(29_000);
    expect(table.records.get('saved')?.absence).toMatch(/saved\.yaml is missing: its editor is stopped at .* unless the file comes back; its files are kept/);
    expect(runtime.stops).toEqual([]);
    expect(existsSync(layout.workspace('saved'))).toBe(true);
    expect(ports.portOf('saved')).toBe(status.port);

    // An editor's delete-then-write save: the same file is back.
    await writeFile(store.fileOf('saved'), text);
    expect(await reconciler.reconcile('saved')).toBeUndefined();
    expect(table.records.get('saved')?.absence).toBeUndefined();
    expect(runtime.stops).toEqual([]);
    expect(runtime.alive('saved')).toEqual([identity]);
    expect(await serverOf('saved')).toMatchObject({ metadata: { uid }, status: { phase: 'Running', runtimeRef: identity, port: status.port } });
  });

  it('stops the editor once the file has been missing for the grace period; files and uid stay for when it comes back', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const status = await startRunning('gone');
    const [identity] = runtime.alive('gone');
    const { uid } = (await serverOf('gone')).metadata;
    const text = await readFile(store.fileOf('gone'), 'utf8');
    await rm(store.fileOf('gone'));
    await reconciler.reconcile('gone');
    vi.setSystemTime(Date.now() + config.controller.orphanGraceSeconds * 1000);

    expect(await reconciler.reconcile('gone')).toBeUndefined();
    expect(runtime.stops).toEqual([identity]);
    expect(existsSync(layout.workspace('gone'))).toBe(true);
    expect(existsSync(layout.editor('gone').userDataDir)).toBe(true);
    expect(table.records.has('gone')).toBe(false);
    expect(ports.owner(status.port!)).toBeUndefined();
    expect(logs.untracked).toEqual([]);

    await writeFile(store.fileOf('gone'), text.replace(/^ {2}uid: .*\n/m, '').replace(/^status:[\s\S]*/m, ''));
    await reconciler.reconcile('gone');
    expect((await serverOf('gone')).metadata.uid).toBe(uid);
    expect(table.nameOfUid(uid!)).toBe('gone');
  });

  it('pauses, stopping and deleting nothing, while the manifests folder is missing, and resumes when it is back', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    await startRunning('left');
    const [identity] = runtime.alive('left');
    await rename(store.dir, `${store.dir}.away`);
    expect((await reconciler.reconcile('left'))?.requeueAfterMs).toBeGreaterThan(0);
    vi.setSystemTime(Date.now() + 3600_000);
    await reconciler.reconcile('left');
    expect(table.records.get('left')?.absence).toMatch(/manifests folder .* is missing: nothing is stopped or deleted until it is back/);
    expect(runtime.stops).toEqual([]);
    expect(existsSync(layout.workspace('left'))).toBe(true);

    await rename(`${store.dir}.away`, store.dir);
    expect(await reconciler.reconcile('left')).toBeUndefined();
    expect(runtime.alive('left')).toEqual([identity]);
    expect(table.records.get('left')?.absence).toBeUndefined();
  });

  it('deletes a server whose file is missing or invalid only when asked, and then removes the file too', async () => {
    await startRunning('asked');
    await writeFile(store.fileOf('asked'), 'apiVersion: [unclosed');
    await reconciler.reconcile('asked');
    expect(runtime.alive('asked')).toHaveLength(1);
    parts.presence.deletions.add('asked');
    await reconciler.reconcile('asked');
    expect(runtime.alive('asked')).toEqual([]);
    expect(existsSync(layout.workspace('asked'))).toBe(false);
    expect(existsSync(store.fileOf('asked'))).toBe(false);
    expect(table.records.has('asked')).toBe(false);
  });

  it('stops the editor of a manifest invalid since the controller restarted, once the file has been missing for the grace period', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    await startRunning('orphan');
    const [identity] = runtime.alive('orphan');
    const text = await readFile(store.fileOf('orphan'), 'utf8');
    await writeFile(store.fileOf('orphan'), text.replace('running: true', 'running: maybe'));
    // The controller restarts while the file is invalid: a new reconciler, the editor still runs.
    const { reconciler: restarted } = reconcilerFor({
      store, runtime, layout, logs, config,
      ports: new PortAllocator(config.ports),
      enqueue: () => undefined,
      log: () => undefined,
    });
    await restarted.reconcile('orphan');
    expect(runtime.isAlive(identity)).toBe(true);

    await rm(store.fileOf('orphan'));
    await restarted.reconcile('orphan');
    expect(runtime.isAlive(identity)).toBe(true);
    vi.setSystemTime(Date.now() + config.controller.orphanGraceSeconds * 1000);
    await restarted.reconcile('orphan');
    expect(runtime.isAlive(identity)).toBe(false);
    expect(existsSync(layout.workspace('orphan'))).toBe(true);
  });

  it('never adopts or stops a process a status names that is not this server\'s editor', async () => {
    await startRunning('owner');
    const [other] = runtime.alive('owner');
    await writeFile(store.fileOf('forged'), stringify({
      apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'forged' },
      spec: { running: false }, status: { phase: 'Running', runtimeRef: other },
    }));
    await reconciler.reconcile('forged');
    expect(runtime.stops).toEqual([]);
    expect(runtime.isAlive(other)).toBe(true);
    expect(await statusOf('forged')).toMatchObject({ phase: 'Stopped', runtimeRef: null });
    expect(table.records.get('forged')?.warnings).toEqual([expect.stringContaining(`status.runtimeRef (id ${other.id}) is not this server's editor`)]);
  });

  it('gives a copy of a manifest its own uid, port and status, and leaves the original alone', async () => {
    const original = await startRunning('original');
    // A file the API made carries its uid; copying it copies the uid.
    const { uid: given } = (await serverOf('original')).metadata;
    const text = (await readFile(store.fileOf('original'), 'utf8')).replace('name: original', `name: original\n  uid: ${given}`);
    await writeFile(store.fileOf('original'), text);
    await writeFile(store.fileOf('copy'), text.replace('name: original', 'name: copy'));
    await reconciler.reconcile('copy');
    const copy = await serverOf('copy');
    const { uid } = (await serverOf('original')).metadata;
    expect(copy.metadata.uid).toMatch(UUID);
    expect(copy.metadata.uid).not.toBe(uid);
    expect(copy.status).toMatchObject({ phase: 'Starting', workspacePath: layout.workspace('copy') });
    expect(copy.status!.port).not.toBe(original.port);
    expect(copy.status!.runtimeRef).not.toEqual(original.runtimeRef);
    expect(runtime.stops).toEqual([]);
    expect(table.nameOfUid(uid!)).toBe('original');
    expect(table.nameOfUid(copy.metadata.uid!)).toBe('copy');
    expect(table.records.get('copy')?.warnings?.[0]).toMatch(/belongs to server "original"/);
  });

  it('removes the editor, its files and the manifest itself when the manifest is marked for deletion', async () => {
    await startRunning('marked');
    await edit('marked', ['metadata', 'deletionTimestamp'], '2026-11-22T06:00:00Z');
    await reconciler.reconcile('marked');
    expect(runtime.alive('marked')).toEqual([]);
    expect(existsSync(store.fileOf('marked'))).toBe(false);
    expect(existsSync(layout.workspace('marked'))).toBe(false);
    expect(table.records.has('marked')).toBe(false);
  });

  it('treats a spec.port that is another server\'s as terminal: Failed/PortUnavailable once, never retried until the spec changes', async () => {
    const port = config.ports.min + 5;
    await writeManifest('first', { port });
    await reconciler.reconcile('first');
    expect((await statusOf('first')).port).toBe(port);

    // The queue as the controller runs it, on a clock the test moves.
    const clock = new FakeClock();
    let runs = 0;
    const terminal: string[] = [];
    const queue = new WorkQueue(async (name) => {
      runs++;
      return reconciler.reconcile(name);
    }, { workers: 1, clock, onTerminal: (name, error) => terminal.push(`${name}: ${error.reason}`) });
    try {
      await writeManifest('second', { port, running: true });
      queue.add('second');
      await queue.idle();
      const status = await statusOf('second');
      expect(status).toMatchObject({ phase: 'Failed', reason: 'PortUnavailable' });
      expect(status.message).toContain('"first"');
      expect(status.port).toBeUndefined();
      expect(ports.owner(port)).toBe('first');

      // Ten minutes on, and a resync on the way: nothing retried, nothing said again.
      for (let second = 0; second < 600; second += 5) {
        clock.advance(5000);
        await queue.idle();
      }
      queue.add('second');
      await queue.idle();
      expect(runs).toBe(2);
      expect(terminal).toEqual(['second: PortUnavailable']);
      expect(await statusOf('second')).toEqual(status);
      expect(runtime.launches).toEqual([]);

      // A spec change is acted on at once.
      await writeManifest('second', { port: port + 1, running: true });
      queue.add('second');
      await queue.idle();
      expect(runtime.launches.map((l) => l.port)).toEqual([port + 1]);
    } finally {
      queue.stop();
    }
  });

  it('says once, not at every retry, that a program it does not manage holds a spec.port', async () => {
    const port = config.ports.min + 9;
    runtime.heldPorts.add(port);
    await writeManifest('squatted', { port, running: true });
    for (let i = 0; i < 5; i++) expect(await reconciler.reconcile('squatted')).toEqual({ requeueAfterMs: 5000 });
    const said = logs.events.filter((e) => e.name === 'squatted' && e.message.includes('held by a process'));
    expect(said).toHaveLength(1);
  });

  it('reports Failed/PortInUse while another program holds the port, and starts once it is free', async () => {
    const port = config.ports.min + 7;
    runtime.heldPorts.add(port);
    await writeManifest('blocked', { port, running: true });
    expect(await reconciler.reconcile('blocked')).toEqual({ requeueAfterMs: 5000 });
    expect(await statusOf('blocked')).toMatchObject({ phase: 'Failed', reason: 'PortInUse', runtimeRef: null });
    expect(runtime.launches).toEqual([]);

    runtime.heldPorts.clear();
    const mark = enqueued.length;
    await reconciler.reconcile('blocked');
    expect(runtime.launches).toHaveLength(1);
    expect(await statusOf('blocked')).toMatchObject({ phase: 'Starting', port });
    await probeReported('blocked', mark);
  });

  it('moves a server to another port when a process it does not manage took the one it was given', async () => {
    await writeManifest('moved', {});
    await reconciler.reconcile('moved');
    const given = (await statusOf('moved')).port!;
    runtime.heldPorts.add(given);
    await writeManifest('moved', { running: true });
    const mark = enqueued.length;
    await reconciler.reconcile('moved');
    const status = await statusOf('moved');
    expect(status.phase).toBe('Starting');
    expect(status.port).not.toBe(given);
    expect(runtime.launches.map((l) => l.port)).toEqual([status.port]);
    expect(ports.owner(given)).toBeUndefined();
    expect(ports.owner(status.port!)).toBe('moved');
    await probeReported('moved', mark);
  });

  it('installs the extensions asked for, records versions and failures, and starts the editor anyway', async () => {
    installer.outcomes.set('ms-python.python', { ok: true, version: '2026.1.0' });
    installer.outcomes.set('broken.ext', { ok: false, message: 'not found in the gallery' });
    await writeManifest('ext', { running: true, extensionGroups: ['python'], extensions: ['broken.ext', 'good.ext'] });

    // The installs run as an operation outside the worker: the reconcile hands it back to wait for.
    const installing = await reconciler.reconcile('ext');
    expect(installing).toHaveProperty('waitFor');
    await (installing as { waitFor: Promise<unknown> }).waitFor;
    const mark = enqueued.length;
    await reconciler.reconcile('ext');
    const extensionsDir = layout.editor('ext').extensionsDir;
    expect(installer.calls).toEqual([
      { extensionsDir, id: 'ms-python.python' },
      { extensionsDir, id: 'broken.ext' },
      { extensionsDir, id: 'good.ext' },
    ]);
    const status = await statusOf('ext');
    expect(status.extensions).toEqual([
      { id: 'ms-python.python', state: 'Installed', version: '2026.1.0' },
      { id: 'broken.ext', state: 'Failed', message: 'not found in the gallery' },
      { id: 'good.ext', state: 'Installed' },
    ]);
    expect(runtime.launches).toHaveLength(1);
    expect(status.phase).toBe('Starting');
    expect(status.reason).toBeUndefined();
    expect(logs.events).toContainEqual({ name: 'ext', level: 'WARN', message: 'extension broken.ext failed to install: not found in the gallery' });

    await probeReported('ext', mark);
    await reconciler.reconcile('ext');
    expect(installer.calls).toHaveLength(3); // nothing installed twice
    expect(await statusOf('ext')).toMatchObject({ phase: 'Running', extensions: status.extensions });
  });

  it('writes spec.settings to the editor\'s settings.json', async () => {
    await writeManifest('tuned', { settings: { 'editor.fontSize': 14 } });
    await reconciler.reconcile('tuned');
    const file = join(layout.editor('tuned').userDataDir, 'User', 'settings.json');
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ 'editor.fontSize': 14 });
  });

  it('records a launch that fails as Failed/LaunchFailed and throws, so the queue retries', async () => {
    runtime.launchError = new Error('spawn code-server ENOENT');
    await writeManifest('nobin', { running: true });
    await expect(reconciler.reconcile('nobin')).rejects.toThrow('ENOENT');
    expect(await statusOf('nobin')).toMatchObject({ phase: 'Failed', reason: 'LaunchFailed', runtimeRef: null });

    runtime.launchError = undefined;
    const mark = enqueued.length;
    await reconciler.reconcile('nobin');
    expect(runtime.launches).toHaveLength(1);
    await probeReported('nobin', mark);
  });
});
