// The cluster's manifests over an in-memory API server: the objects are read from the watch's
// cache as manifests (no copy on disk), a change someone else makes is news for the controller
// and the service's own writes are not, the API's writes reach the objects and never overwrite
// a change made meanwhile, status goes through /status with
// the object's generation and is put back when forged, a delete waits for the finalizer, and a
// hostile object is only ever an invalid manifest.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClusterManifestStore } from '../../src/cluster/cluster-store.ts';
import { FINALIZER } from '../../src/cluster/editor-servers.ts';
import type { EditorServer } from '../../src/manifests/types.ts';
import { eventually } from '../helpers/wait.ts';
import { FakeEditorServers } from './fake-editor-servers.ts';

let root: string;
let api: FakeEditorServers;
let store: ClusterManifestStore;
let lines: string[];
/** The names the store told the controller about, in order. */
let news: string[];

function hello(name = 'hello', spec: Record<string, unknown> = { running: true }): EditorServer {
  return { apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec } as unknown as EditorServer;
}

async function open(): Promise<ClusterManifestStore> {
  const opened = new ClusterManifestStore({ dir: join(root, 'copy'), statusDir: join(root, 'status'), api, log: (line) => lines.push(line) });
  await opened.start();
  await opened.watch({ changed: (name) => news.push(name), everything: () => {}, known: () => [] });
  return opened;
}

beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-cluster-store-'));
  api = new FakeEditorServers();
  lines = [];
  news = [];
});
afterEach(async () => {
  await store?.close();
  await fs.rm(root, { recursive: true, force: true });
});

describe('the objects as manifests', () => {
  it('lists every object at start, keeps no copy on disk (removing one an earlier version kept), and puts the finalizer on each object asked to run', async () => {
    await api.create(hello('hello'));
    await api.create(hello('idle', { running: false }));
    await fs.mkdir(join(root, 'copy'), { recursive: true });
    await fs.writeFile(join(root, 'copy', 'gone.yaml'), 'apiVersion: devbox.dev/v1alpha1\n');
    store = await open();
    expect(await store.prepare()).toEqual([expect.stringMatching(/removed .*copy/)]);
    expect(await fs.stat(join(root, 'copy')).catch(() => undefined)).toBeUndefined();
    expect(await store.list()).toEqual(['hello', 'idle']);
    const read = await store.read('hello');
    expect(read.kind).toBe('ok');
    expect(read.kind === 'ok' && read.server.metadata.uid).toBe(api.objects.get('hello')!.metadata.uid);
    expect(api.objects.get('hello')!.metadata.finalizers).toEqual([FINALIZER]);
    // Never asked to run, it has nothing on the cluster to clean up: no write for a finalizer.
    expect(api.objects.get('idle')!.metadata.finalizers).toBeUndefined();
    api.touch('idle', (o) => ({ ...o, spec: { ...o.spec!, running: true } }));
    await store.settled();
    expect(api.objects.get('idle')!.metadata.finalizers).toEqual([FINALIZER]);
  });

  it('follows an object changed by someone else, and tells the controller', async () => {
    await api.create(hello());
    store = await open();
    await store.settled();
    news.length = 0;
    api.touch('hello', (o) => ({ ...o, spec: { ...o.spec!, running: false, displayName: 'Changed' } }));
    await store.settled();
    await eventually(() => news.includes('hello'));
    expect(await store.readText('hello')).toContain('displayName: Changed');
    const read = await store.read('hello');
    expect(read.kind === 'ok' && read.server.metadata.generation).toBe(api.objects.get('hello')!.metadata.generation);
  });

  it('reads an object the schema refuses as an invalid manifest naming the field, and writes no status for it', async () => {
    store = await open();
    await api.create(hello('bad', { running: 'yes', port: 80 }));
    await store.settled();
    const read = await store.read('bad');
    expect(read.kind).toBe('invalid');
    expect(read.kind === 'invalid' && read.errors.join('\n')).toMatch(/spec\.running|running/);
    expect(await store.writeStatus('bad', { phase: 'Running' })).toBe('invalid');
    expect(api.objects.get('bad')!.status).toBeUndefined();
  });

  it('tells the controller of an object deleted without it (its finalizer taken off by hand): it is no manifest any more', async () => {
    await api.create(hello());
    store = await open();
    await store.settled();
    news.length = 0;
    api.touch('hello', (o) => ({ ...o, metadata: { ...o.metadata, finalizers: [] } }));
    await api.delete('hello');
    await eventually(async () => (await store.read('hello')).kind === 'missing');
    expect(await store.list()).toEqual([]);
    expect(news).toContain('hello');
  });

  it('takes none of its own writes for news: finalizers, status and the API\'s changes wake nothing; a change by someone else does', async () => {
    await api.create(hello('quiet', { running: false }));
    store = await open();
    await store.settled();
    news.length = 0;
    await store.update('quiet', (doc) => { doc.setIn(['spec', 'running'], true); });
    await store.settled();
    await store.writeStatus('quiet', { phase: 'Running', port: 8010 });
    await store.settled();
    expect(api.objects.get('quiet')!.metadata.finalizers).toEqual([FINALIZER]);
    expect(api.objects.get('quiet')!.status).toEqual({ phase: 'Running', port: 8010 });
    expect(news).toEqual([]);
    api.touch('quiet', (o) => ({ ...o, metadata: { ...o.metadata, labels: { team: 'b' } } }));
    await eventually(() => news.length > 0);
    expect(news).toEqual(['quiet']);
  });
});

describe('the API\'s writes', () => {
  it('creates the object (with the owner annotation and the finalizer) and reads it at once with the object\'s uid', async () => {
    store = await open();
    const server: EditorServer = { ...hello('made'), metadata: { name: 'made', uid: '11111111-1111-4111-8111-111111111111', annotations: { 'devbox.dev/owner': 'ada@example.com' } } };
    let created = false;
    expect(await store.create(server, () => (created = true))).toBe(true);
    expect(created).toBe(true);
    const object = api.objects.get('made')!;
    expect(object.metadata.annotations).toEqual({ 'devbox.dev/owner': 'ada@example.com' });
    expect(object.metadata.finalizers).toEqual([FINALIZER]);
    expect(server.metadata.uid).toBe(object.metadata.uid);
    expect(await store.readText('made')).toContain(`uid: ${object.metadata.uid}`);
    // The name is taken: the API tries the next one.
    expect(await store.create(hello('made'))).toBe(false);
  });

  it('changes the object only at the version it read: a change made meanwhile is read again and kept', async () => {
    await api.create(hello());
    store = await open();
    api.conflicts = 1;
    const result = await store.update('hello', (doc) => {
      doc.setIn(['spec', 'running'], false);
    });
    expect(result).toBe('updated');
    const object = api.objects.get('hello')!;
    expect(object.spec!.running).toBe(false);
    expect(object.metadata.labels).toEqual({ other: 'writer' });
    expect(object.metadata.finalizers).toEqual([FINALIZER]);
    expect(await store.readText('hello')).toContain('running: false');
  });

  it('turns a deletion mark into a delete the finalizer holds, and lets the object go once the server is removed', async () => {
    await api.create(hello());
    store = await open();
    await store.update('hello', (doc) => {
      doc.setIn(['metadata', 'deletionTimestamp'], new Date().toISOString());
    });
    expect(api.objects.get('hello')!.metadata.deletionTimestamp).toBeDefined();
    expect(await store.readText('hello')).toContain('deletionTimestamp');
    expect(await store.remove('hello')).toBe(true);
    expect(api.objects.has('hello')).toBe(false);
    expect(await store.list()).toEqual([]);
    expect((await store.read('hello')).kind).toBe('missing');
  });

  it('never releases an object made again under the name: only the deleted server\'s own', async () => {
    await api.create(hello());
    store = await open();
    const first = api.objects.get('hello')!.metadata.uid;
    await store.update('hello', (doc) => {
      doc.setIn(['metadata', 'deletionTimestamp'], new Date().toISOString());
    });
    // Someone deletes it by hand and applies it again before the controller is done.
    api.touch('hello', (o) => ({ ...o, metadata: { ...o.metadata, finalizers: [] } }));
    api.objects.delete('hello');
    await api.create(hello());
    const second = api.objects.get('hello')!;
    expect(second.metadata.uid).not.toBe(first);
    await store.remove('hello', first);
    expect(api.objects.get('hello')?.metadata.uid).toBe(second.metadata.uid);
    expect(api.objects.get('hello')?.metadata.deletionTimestamp).toBeUndefined();
  });

  it('creates and replaces objects for a GitOps repository\'s manifests, and refuses an invalid one', async () => {
    store = await open();
    const text = 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata: { name: from-git }\nspec: { running: false }\n';
    expect(await store.replaceText('from-git', text)).toBe('created');
    expect(await store.replaceText('from-git', text.replace('running: false', 'running: true'))).toBe('updated');
    expect(api.objects.get('from-git')!.spec!.running).toBe(true);
    expect(await store.replaceText('from-git', text.replace('running: false', 'running: maybe'))).toBe('invalid');
    expect(api.objects.get('from-git')!.spec!.running).toBe(true);
  });
});

describe('status', () => {
  it('goes to the object through /status with the object\'s generation, and is put back when someone else writes it', async () => {
    await api.create(hello());
    store = await open();
    const read = await store.read('hello');
    const generation = read.kind === 'ok' ? read.server.metadata.generation : undefined;
    expect(generation).toBe(1);
    const status = { phase: 'Running' as const, observedGeneration: generation, port: 8010 };
    await store.writeStatus('hello', status);
    expect(api.objects.get('hello')!.status).toEqual(status);

    api.touch('hello', (o) => ({ ...o, status: { phase: 'Failed', reason: 'Forged' } }));
    await store.settled();
    expect(api.objects.get('hello')!.status).toEqual(status);
    expect(lines.join('\n')).toMatch(/the status of editorserver\/hello was not the controller's .*put back/);
  });

  it('writes only the latest of the commits queued behind a write in flight, and takes no event of its own writes for news', async () => {
    await api.create(hello());
    store = await open();
    await store.settled();
    const real = api.setStatus.bind(api);
    const written: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    api.setStatus = async (name, status) => {
      written.push(status.phase);
      if (written.length === 1) await gate;
      return real(name, status);
    };
    const first = store.writeStatus('hello', { phase: 'Pending' });
    await eventually(() => written.length === 1);
    // Two more commits, one after the other (a name's reconciles never overlap), each recorded
    // (the controller's own record) and waiting behind the first write.
    const recorded = (phase: string) => eventually(async () => {
      const read = await store.read('hello');
      return read.kind === 'ok' && read.server.status?.phase === phase;
    });
    const queued = [store.writeStatus('hello', { phase: 'Provisioning' })];
    await recorded('Provisioning');
    queued.push(store.writeStatus('hello', { phase: 'Stopped', port: 8010 }));
    await recorded('Stopped');
    release();
    await Promise.all([first, ...queued]);
    await store.settled();
    expect(written).toEqual(['Pending', 'Stopped']);
    expect(api.objects.get('hello')!.status).toEqual({ phase: 'Stopped', port: 8010 });
    expect(lines.join('\n')).not.toMatch(/put back/);
  });

  it('takes a status over from the object once, when the controller has none of its own (a new controller)', async () => {
    await api.create(hello());
    await api.setStatus('hello', { phase: 'Running', port: 8011 });
    store = await open();
    const read = await store.read('hello');
    expect(read.kind === 'ok' && read.server.status).toEqual({ phase: 'Running', port: 8011 });
    expect(lines.join('\n')).not.toMatch(/put back/);
  });
});
