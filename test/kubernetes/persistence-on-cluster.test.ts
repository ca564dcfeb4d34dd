// Persistence with the Kubernetes runtime on the real test cluster: a running editor's workspace
// is snapshotted to a folder target through its Pod, a deleted server comes back with its files
// (undelete), a fresh namespace and data folder are restored from the target (manifests put back,
// volumes refilled before the editors start), and an API server killed (SIGKILL) in the middle of
// a snapshot leaves the target whole and the next snapshot working.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnapshotEngine } from '../../src/persistence/engine.ts';
import { FolderStore } from '../../src/persistence/folder-store.ts';
import { USER_FILES } from '../../src/persistence/service-records.ts';
import { killComponent, NO_CLUSTER, startComponent, testCluster } from '../helpers/cluster.ts';
import { editorServer, installCrd, releaseEditorServers } from '../helpers/crd.ts';
import { closeClusterService, execInEditor, objectsOf, readyPod, startClusterService, workspaceFile } from '../helpers/cluster-service.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { createAndStart } from '../helpers/kube-service.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

/** A Pod's start, or its deletion: seconds on Kubernetes 1.20, more under load. */
const POD_WAIT_MS = 120_000;
const NOTE = 'kept on the cluster\nsecond line\n';

let keep: string;
const namespaces: Array<{ name: string; remove(): Promise<void> }> = [];
const services: TestService[] = [];
/** Namespaces whose EditorServer objects hold the finalizer until released. */
const crdNamespaces: string[] = [];

beforeAll(async () => {
  if (!cluster) return;
  keep = await fs.mkdtemp(join(tmpdir(), 'devbox-keep-'));
});
afterAll(async () => {
  for (const service of services) await closeClusterService(service).catch(() => undefined);
  for (const namespace of crdNamespaces) await releaseEditorServers(cluster!, namespace).catch(() => undefined);
  for (const namespace of namespaces) await namespace.remove();
  if (keep) await fs.rm(keep, { recursive: true, force: true });
});

async function serviceIn(prefix: string, options: { crd?: boolean; target?: string } = {}): Promise<{ service: TestService; ns: string }> {
  const namespace = await testNamespace(cluster!, prefix);
  namespaces.push(namespace);
  const service = await startClusterService(cluster!, namespace.name, stubEditor(), {
    persistTo: options.target ?? keep, ...(options.crd ? { kubernetes: { source: 'crd' as const } } : {}),
  });
  services.push(service);
  return { service, ns: namespace.name };
}

/** The server's id by manifest name (GET /servers), once it is listed. */
async function idOf(service: TestService, name: string): Promise<string | undefined> {
  const list: any[] = (await service.request('GET', '/servers')).body;
  return list.find((s) => s.manifest === name)?.id;
}

/** The engine's own restore of the server's latest snapshot into a new folder: every file checked against its hash. */
async function restoredFromTarget(name: string, target = keep): Promise<{ dir: string; corrupted: string[]; files: number }> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-restored-'));
  const engine = new SnapshotEngine({ store: new FolderStore(target), cacheDir: join(dir, 'cache'), log: () => undefined });
  try {
    const result = await engine.restore(name, { roots: [{ id: 'workspace', dir: join(dir, 'workspace') }, { id: 'user', dir: join(dir, 'user'), only: USER_FILES }] });
    return { dir, corrupted: result.corrupted, files: result.files };
  } finally {
    engine.close?.();
  }
}

describe.skipIf(!cluster)('persistence on the cluster', () => {
  let first: { service: TestService; ns: string };

  it("snapshots a running editor's workspace to the target, and an undelete brings the deleted server back with its file", async () => {
    first = await serviceIn('devbox-keep-a');
    const { service, ns } = first;
    const { id, started } = await createAndStart(service, 'alpha');
    expect(started.status).toBe(200);
    await eventually(() => readyPod(cluster!, ns, 'alpha'), POD_WAIT_MS, 250);
    await execInEditor(cluster!, ns, 'alpha', `printf '${NOTE.replace(/\n/g, '\\n')}' > /data/workspace/notes.txt && mkdir -p /data/editor/data/User && echo '{"editor.tabSize": 3}' > /data/editor/data/User/keybindings.json`);

    const snapshot = await service.request('POST', `/servers/${id}/snapshot`);
    expect(snapshot.status).toBe(200);
    expect(snapshot.body.data.files).toBeGreaterThanOrEqual(2);
    const kept = await restoredFromTarget('alpha');
    expect(await fs.readFile(join(kept.dir, 'workspace', 'notes.txt'), 'utf8')).toBe(NOTE);
    expect(await fs.readFile(join(kept.dir, 'user', 'keybindings.json'), 'utf8')).toBe('{"editor.tabSize": 3}\n');
    await fs.rm(kept.dir, { recursive: true, force: true });

    // The delete takes the volume with it; the target keeps the server for retainDeletedDays.
    expect((await service.request('DELETE', `/servers/${id}`)).status).toBeLessThan(300);
    await eventually(async () => (await objectsOf(cluster!, ns, 'alpha')).length === 0, POD_WAIT_MS, 500);
    const deleted = await eventually(async () => {
      const answer = await service.request('GET', '/snapshots/deleted');
      return answer.body.data?.servers?.find((s: { name: string }) => s.name === 'alpha');
    }, 30_000, 250);
    expect(deleted.id).toBe(id);

    const undeleted = await service.request('POST', '/snapshots/deleted/alpha/restore');
    expect(undeleted.status).toBe(201);
    expect(undeleted.body.id ?? undeleted.body.data?.id).toBe(id);
    // Its volume is filled before its editor starts, and the editor finds the file there.
    await eventually(() => readyPod(cluster!, ns, 'alpha'), POD_WAIT_MS, 250);
    // (kubectl's output loses its last newline; the volume's host folder has the bytes.)
    expect(await execInEditor(cluster!, ns, 'alpha', 'cat /data/workspace/notes.txt')).toBe(NOTE.trimEnd());
    expect(await execInEditor(cluster!, ns, 'alpha', 'cat /data/editor/data/User/keybindings.json')).toBe('{"editor.tabSize": 3}');
    expect(await workspaceFile(cluster!, ns, 'alpha', 'notes.txt')).toBe(NOTE);
  }, 600_000);

  it('restores a fresh namespace and data folder from the target: the server comes back with its id and its file', async () => {
    const { service: old } = first;
    const id = await idOf(old, 'alpha');
    // The old service goes (its editor keeps running in the old namespace: another cluster, as far as the new one knows).
    await closeClusterService(old);
    services.splice(services.indexOf(old), 1);

    const { service, ns } = await serviceIn('devbox-keep-b');
    first = { service, ns };
    expect(await eventually(() => idOf(service, 'alpha'), 30_000, 250)).toBe(id);
    await eventually(() => readyPod(cluster!, ns, 'alpha'), POD_WAIT_MS, 250);
    expect(await workspaceFile(cluster!, ns, 'alpha', 'notes.txt')).toBe(NOTE);
    expect(await execInEditor(cluster!, ns, 'alpha', 'cat /data/workspace/notes.txt')).toBe(NOTE.trimEnd());
    const record = (await service.request('GET', `/servers/${id}`)).body;
    expect(record.conditions.find((c: { type: string }) => c.type === 'Restored')).toMatchObject({ status: 'True', reason: 'Restored', message: expect.stringMatching(/files from snapshot/) });
  }, 600_000);

  it('keeps the target whole when the API server is killed during a snapshot, and the next snapshot succeeds', async () => {
    const { service, ns } = first;
    const id = (await idOf(service, 'alpha'))!;
    // Enough bytes that the copy out of the volume is under way when the API server goes.
    await execInEditor(cluster!, ns, 'alpha', 'dd if=/dev/urandom of=/data/workspace/big.bin bs=1048576 count=48 2>/dev/null && sha256sum /data/workspace/big.bin');
    const digest = (await execInEditor(cluster!, ns, 'alpha', 'sha256sum /data/workspace/big.bin')).split(' ')[0];
    const before = (await service.request('GET', `/servers/${id}/snapshots`)).body.data.snapshots.length;

    const taking = service.request('POST', `/servers/${id}/snapshot`);
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.persistence?.in_progress === 'snapshot', 30_000, 20);
    await killComponent('kube-apiserver');
    let answered: { status: number; body: any };
    try {
      answered = await taking;
    } finally {
      await startComponent('kube-apiserver');
    }
    // Failed (the exec's connection went with the API server), or done before the kill took: never half-kept.
    expect([200, 500, 502, 503]).toContain(answered.status);
    const afterKill = (await service.request('GET', `/servers/${id}/snapshots`)).body.data.snapshots.length;
    expect(afterKill - before).toBe(answered.status === 200 ? 1 : 0);

    // The next snapshot works once the API server answers again, and the target holds every byte.
    const next = await eventually(async () => {
      const answer = await service.request('POST', `/servers/${id}/snapshot`);
      return answer.status === 200 ? answer : undefined;
    }, 120_000, 1000);
    expect(next.body.data.files).toBeGreaterThanOrEqual(3);
    const kept = await restoredFromTarget('alpha');
    try {
      expect(kept.corrupted).toEqual([]);
      expect(await fs.readFile(join(kept.dir, 'workspace', 'notes.txt'), 'utf8')).toBe(NOTE);
      const { createHash } = await import('node:crypto');
      expect(createHash('sha256').update(await fs.readFile(join(kept.dir, 'workspace', 'big.bin'))).digest('hex')).toBe(digest);
    } finally {
      await fs.rm(kept.dir, { recursive: true, force: true });
    }
    // No copy is left behind in the data folder.
    expect(await fs.readdir(join(service.root, 'data', 'persistence-staging')).catch(() => [])).toEqual([]);
  }, 600_000);

  it("in CRD mode, puts the EditorServer object back in a fresh namespace with its id, and refills its volume from the target", async () => {
    await installCrd(cluster!);
    const target = await fs.mkdtemp(join(tmpdir(), 'devbox-keep-crd-'));
    try {
      const { service: old, ns: oldNs } = await serviceIn('devbox-keep-crd-a', { crd: true, target });
      crdNamespaces.push(oldNs);
      const { id, started } = await createAndStart(old, 'delta');
      expect(started.status).toBe(200);
      await eventually(() => readyPod(cluster!, oldNs, 'delta'), POD_WAIT_MS, 250);
      await execInEditor(cluster!, oldNs, 'delta', "printf 'in a CRD namespace\\n' > /data/workspace/crd.txt");
      expect((await old.request('POST', `/servers/${id}/snapshot`)).status).toBe(200);
      await closeClusterService(old);
      services.splice(services.indexOf(old), 1);

      const { service, ns } = await serviceIn('devbox-keep-crd-b', { crd: true, target });
      crdNamespaces.push(ns);
      const object = await eventually(() => editorServer(cluster!, ns, 'delta'), 60_000, 250);
      expect(object.spec.running).toBe(true);
      await eventually(() => readyPod(cluster!, ns, 'delta'), POD_WAIT_MS, 250);
      expect(await workspaceFile(cluster!, ns, 'delta', 'crd.txt')).toBe('in a CRD namespace\n');
      expect(await eventually(() => idOf(service, 'delta'), 30_000, 250)).toBe(id);
    } finally {
      await fs.rm(target, { recursive: true, force: true });
    }
  }, 600_000);
});
