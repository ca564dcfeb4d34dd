// What a runtime on a platform (a cluster) says beyond a process's life and death, and how the
// controller shows it: a start not placed (Pending, asked again, never a crash), a problem of a
// live editor (shown while it lasts), the platform's events, and the resources a start carries.
// Against the real manifest store and a fake runtime that speaks as a cluster runtime does.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEFAULT_CONFIG, type Config } from '../../src/config/settings.ts';
import { PortAllocator } from '../../src/controller/ports.ts';
import type { Reconciler } from '../../src/controller/reconciler.ts';
import type { ServerTable } from '../../src/index/server-table.ts';
import { ManifestStore } from '../../src/manifests/store.ts';
import type { EditorServerSpec, EditorServerStatus } from '../../src/manifests/types.ts';
import { StorageUnavailable } from '../../src/runtime/interface.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { FakeInstaller, FakeLogs, FakeRuntime } from '../helpers/fakes.ts';
import { reconcilerFor } from '../helpers/reconciler.ts';
import { eventually } from '../helpers/wait.ts';

const UNSCHEDULABLE = { reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' };
const IMAGE_PULL = { reason: 'ImagePullBackOff', message: 'Back-off pulling image "docker.io/codercom/code-server:4.139.1"' };
const NODE_NOT_READY = { reason: 'NodeNotReady', message: 'node "worker-1" is not ready' };

let root: string;
let config: Config;
let store: ManifestStore;
let runtime: FakeRuntime;
let logs: FakeLogs;
let enqueued: string[];
let reconciler: Reconciler;
let table: ServerTable;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'devbox-platform-runtime-'));
  const min = 10_000 + Math.floor(Math.random() * 400) * 20;
  config = structuredClone(DEFAULT_CONFIG);
  config.ports = { min, max: min + 19 };
  config.editor = { ...config.editor, readyTimeoutSeconds: 5, stopGraceSeconds: 1, idleTimeoutSeconds: 0 };
  const layout = new DataLayout(join(root, 'data'));
  store = new ManifestStore(join(root, 'manifests'), layout.statusDir);
  await mkdir(store.dir);
  runtime = new FakeRuntime(layout, new FakeInstaller());
  logs = new FakeLogs(join(root, 'data', 'logs'));
  enqueued = [];
  ({ reconciler, table } = reconcilerFor({
    store, runtime, ports: new PortAllocator(config.ports), layout, logs, config,
    enqueue: (name) => enqueued.push(name),
    log: () => undefined,
  }));
});

afterEach(async () => {
  await runtime.close();
  await rm(root, { recursive: true, force: true });
});

async function writeManifest(name: string, spec: Partial<EditorServerSpec> = {}): Promise<void> {
  const manifest = { apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec: { running: true, ...spec } };
  await writeFile(store.fileOf(name), stringify(manifest));
}

async function statusOf(name: string): Promise<EditorServerStatus> {
  const read = await store.read(name);
  if (read.kind !== 'ok' || !read.server.status) throw new Error(`${name} has no status`);
  return read.server.status;
}

function readyOf(status: EditorServerStatus) {
  return status.conditions?.find((c) => c.type === 'Ready');
}

/** The events the controller said for the server, as "LEVEL message". */
function eventsOf(name: string): string[] {
  return logs.events.filter((e) => e.name === name).map((e) => `${e.level} ${e.message}`);
}

/** Reconciles until the background /healthz probe has reported and status says Running. */
async function untilRunning(name: string): Promise<EditorServerStatus> {
  await eventually(async () => {
    await reconciler.reconcile(name);
    return (await statusOf(name)).phase === 'Running';
  }, 5000, 10);
  return statusOf(name);
}

describe('a start the platform has not placed', () => {
  it('is Pending with the platform\'s reason and words, said once, asked again with backoff, and never a crash', async () => {
    runtime.notPlaced = UNSCHEDULABLE;
    await writeManifest('big');
    expect(await reconciler.reconcile('big')).toEqual({ requeueAfterMs: 1000 });
    const pending = await statusOf('big');
    expect(pending).toMatchObject({ phase: 'Pending', ...UNSCHEDULABLE, runtimeRef: null });
    expect(readyOf(pending)).toMatchObject({ status: 'False', ...UNSCHEDULABLE });
    const standing = runtime.unplacedOf('big');
    expect(standing).toBeDefined();

    expect(await reconciler.reconcile('big')).toEqual({ requeueAfterMs: 2000 });
    expect(await reconciler.reconcile('big')).toEqual({ requeueAfterMs: 4000 });
    expect(runtime.launches).toHaveLength(3);
    // The same request stands in the platform; nothing was recorded as an exit.
    expect(runtime.unplacedOf('big')).toEqual(standing);
    const still = await statusOf('big');
    expect(still).toMatchObject({ phase: 'Pending', reason: 'Unschedulable' });
    expect(still.restarts).toBeUndefined();
    expect(still.lastExit).toBeUndefined();
    expect(eventsOf('big').filter((e) => !e.startsWith('INFO created'))).toEqual([
      'INFO starting code-server on port ' + still.port,
      `WARN not started yet: Unschedulable: ${UNSCHEDULABLE.message}`,
    ]);
    expect(table.serverNamed('big')?.status?.phase).toBe('Pending');

    // Room frees: the next try finds the standing request placed, and it starts as any editor.
    runtime.notPlaced = undefined;
    await reconciler.reconcile('big');
    const placed = await statusOf('big');
    expect(placed).toMatchObject({ phase: 'Starting', runtimeRef: standing });
    expect(placed.reason).toBeUndefined();
    expect(eventsOf('big')).toContain('INFO placed: the editor is starting');
    expect(await untilRunning('big')).toMatchObject({ phase: 'Running', runtimeRef: standing });
  });

  it('is asked again without reading the extensions anew while the spec wants the same ones (on a cluster each read runs a Pod)', async () => {
    let reads = 0;
    const read = runtime.installedExtensions.bind(runtime);
    // acme.tool is in the editor's storage already (a server with none wanted has nothing read).
    runtime.installedExtensions = async (name) => {
      reads++;
      return new Map([...await read(name), ['acme.tool', undefined]]);
    };
    runtime.notPlaced = UNSCHEDULABLE;
    await writeManifest('tries', { extensions: ['acme.tool'] });
    for (let i = 0; i < 4; i++) await reconciler.reconcile('tries');
    expect(runtime.launches).toHaveLength(4);
    expect(reads).toBe(1);
    // Other extensions wanted: they are looked at again before the next try.
    await writeManifest('tries', { extensions: ['acme.tool', 'acme.other'] });
    await reconciler.reconcile('tries');
    expect(reads).toBe(2);
    runtime.notPlaced = undefined;
    await eventually(async () => {
      await reconciler.reconcile('tries');
      return (await statusOf('tries')).extensions?.[0]?.state === 'Installed' && (await statusOf('tries')).phase !== 'Pending';
    }, 5000, 10);
  });

  it('is withdrawn when the spec no longer wants the editor, so it never starts later', async () => {
    runtime.notPlaced = UNSCHEDULABLE;
    await writeManifest('withdrawn');
    await reconciler.reconcile('withdrawn');
    const standing = runtime.unplacedOf('withdrawn')!;
    await writeManifest('withdrawn', { running: false });
    await reconciler.reconcile('withdrawn');
    expect(runtime.stops).toEqual([standing]);
    expect(runtime.unplacedOf('withdrawn')).toBeUndefined();
    const stopped = await statusOf('withdrawn');
    expect(stopped.phase).toBe('Stopped');
    expect(stopped.reason).toBeUndefined();
  });
});

describe('storage the platform cannot reach while no editor runs', () => {
  it('is Pending with the platform\'s reason, said once, asked again with backoff, and the server starts once it can be reached', async () => {
    let unavailable: StorageUnavailable | undefined = new StorageUnavailable({ reason: 'ImagePullBackOff', message: 'the Pod devbox-cut-storage that mounts the server\'s volume cannot run: Back-off pulling image "registry.example/editor:1"' });
    const read = runtime.installedExtensions.bind(runtime);
    runtime.installedExtensions = async (name) => {
      if (unavailable) throw unavailable;
      return read(name);
    };
    // An extension wanted: its storage must be read before the editor starts.
    await writeManifest('cut', { extensions: ['acme.tool'] });
    expect(await reconciler.reconcile('cut')).toEqual({ requeueAfterMs: 1000 });
    expect(await reconciler.reconcile('cut')).toEqual({ requeueAfterMs: 2000 });
    const pending = await statusOf('cut');
    expect(pending).toMatchObject({ phase: 'Pending', reason: 'ImagePullBackOff', message: unavailable.problem.message });
    expect(readyOf(pending)).toMatchObject({ status: 'False', reason: 'ImagePullBackOff' });
    expect(eventsOf('cut').filter((e) => e.includes('ImagePullBackOff'))).toEqual([`WARN its storage cannot be reached yet: ImagePullBackOff: ${unavailable.problem.message}`]);
    expect(runtime.launches).toEqual([]);

    unavailable = undefined;
    const running = await untilRunning('cut');
    expect(running.reason).toBeUndefined();
    expect(runtime.launches).toHaveLength(1);
  });
});

describe('a problem the runtime reports for a live editor', () => {
  it('shows while a starting editor has it (Starting, its reason, Ready False), once in the events, and the editor runs once it goes', async () => {
    await writeManifest('pull');
    await reconciler.reconcile('pull');
    runtime.setProblem('pull', IMAGE_PULL);
    expect(enqueued).toContain('pull');
    await reconciler.reconcile('pull');
    await reconciler.reconcile('pull');
    const stuck = await statusOf('pull');
    expect(stuck).toMatchObject({ phase: 'Starting', ...IMAGE_PULL });
    expect(readyOf(stuck)).toMatchObject({ status: 'False', ...IMAGE_PULL });
    expect(eventsOf('pull').filter((e) => e.includes('ImagePullBackOff'))).toEqual([`WARN ImagePullBackOff: ${IMAGE_PULL.message}`]);

    runtime.setProblem('pull', undefined);
    const running = await untilRunning('pull');
    expect(running.reason).toBeUndefined();
    expect(running.message).toBeUndefined();
    expect(readyOf(running)).toMatchObject({ status: 'True', reason: 'HealthzAnswered' });
    expect(eventsOf('pull')).toContain('INFO ImagePullBackOff is over: waiting for code-server to answer /healthz');
  });

  it('makes a running editor Failed with the runtime\'s reason while it lasts, and Running again once it goes and the editor answers', async () => {
    await writeManifest('node');
    const before = await untilRunning('node');
    runtime.setProblem('node', NODE_NOT_READY);
    await reconciler.reconcile('node');
    const failed = await statusOf('node');
    expect(failed).toMatchObject({ phase: 'Failed', ...NODE_NOT_READY, runtimeRef: before.runtimeRef, startTime: before.startTime });
    expect(readyOf(failed)).toMatchObject({ status: 'False', ...NODE_NOT_READY });
    // Not an exit: nothing restarted, nothing recorded as a crash.
    expect(runtime.launches).toHaveLength(1);
    expect(failed.lastExit).toBeUndefined();
    expect(table.serverNamed('node')?.status?.reason).toBe('NodeNotReady');

    runtime.setProblem('node', undefined);
    const back = await untilRunning('node');
    expect(back).toMatchObject({ phase: 'Running', runtimeRef: before.runtimeRef, startTime: before.startTime });
    expect(runtime.launches).toHaveLength(1);
  });
});

describe('a running editor whose storage cannot be looked at (its node\'s kubelet down)', () => {
  it('still shows the runtime\'s problem: the extensions that could not be read do not hold its status', async () => {
    await writeManifest('lost');
    const before = await untilRunning('lost');
    runtime.installedExtensions = async () => {
      throw new Error('exec in devbox-lost-0 failed: error dialing backend: dial tcp 10.233.77.1:10350: connect: connection refused');
    };
    runtime.setProblem('lost', NODE_NOT_READY);
    await reconciler.reconcile('lost');
    expect(await statusOf('lost')).toMatchObject({ phase: 'Failed', ...NODE_NOT_READY, runtimeRef: before.runtimeRef, startTime: before.startTime });
  });
});

describe('what the platform says about an editor', () => {
  it('goes to the server\'s log and its events, and is dropped for a server the controller does not know', async () => {
    await writeManifest('talked');
    await reconciler.reconcile('talked');
    runtime.emitEvent('talked', { level: 'WARN', reason: 'FailedMount', message: 'MountVolume.SetUp failed for volume "data"' });
    runtime.emitEvent('talked', { level: 'INFO', reason: 'Pulled', message: 'Container image already present on machine' });
    runtime.emitEvent('stranger', { level: 'WARN', reason: 'FailedMount', message: 'not ours' });
    expect(eventsOf('talked')).toEqual(expect.arrayContaining([
      'WARN FailedMount: MountVolume.SetUp failed for volume "data"',
      'INFO Pulled: Container image already present on machine',
    ]));
    expect(table.eventsOf('talked')).toEqual(expect.arrayContaining([
      expect.objectContaining({ type: 'Warning', reason: 'FailedMount', message: 'MountVolume.SetUp failed for volume "data"' }),
      expect.objectContaining({ type: 'Normal', reason: 'Pulled' }),
    ]));
    expect(eventsOf('stranger')).toEqual([]);
    expect(table.eventsOf('stranger')).toEqual([]);
  });
});

describe('the resources a start carries', () => {
  it('are the manifest\'s over the config\'s defaults, read at each start', async () => {
    await writeManifest('sized', { resources: { requests: { cpu: '2' }, limits: { memory: '4Gi' } } });
    await reconciler.reconcile('sized');
    expect(runtime.launches[0].resources).toEqual({ requests: { cpu: '2', memory: '1Gi' }, limits: { memory: '4Gi' } });
  });
});

describe('a workspace that has the same path for every server (a Pod\'s, in each server\'s own volume)', () => {
  it('is no sign of a copied status: the status of each server stays its own across reconciles', async () => {
    const podPaths = Object.assign(runtime, {
      prepare: async (name: string) => {
        await FakeRuntime.prototype.prepare.call(runtime, name);
        return '/data/workspace';
      },
    });
    const warnings: string[] = [];
    ({ reconciler, table } = reconcilerFor({
      store, runtime: podPaths, ports: new PortAllocator(config.ports), layout: new DataLayout(join(root, 'data')), logs, config,
      enqueue: () => undefined,
      log: (line) => warnings.push(line),
    }));
    await writeManifest('one');
    await writeManifest('two');
    const one = await untilRunning('one');
    const two = await untilRunning('two');
    expect(one.workspacePath).toBe('/data/workspace');
    await reconciler.reconcile('one');
    await reconciler.reconcile('two');
    expect(await statusOf('one')).toMatchObject({ phase: 'Running', runtimeRef: one.runtimeRef, port: one.port, startTime: one.startTime });
    expect(await statusOf('two')).toMatchObject({ phase: 'Running', runtimeRef: two.runtimeRef, port: two.port, startTime: two.startTime });
    expect(runtime.launches).toHaveLength(2);
    expect([...warnings, ...table.records.get('one')?.warnings ?? []].join('\n')).not.toMatch(/not this server's/);
  });
});
