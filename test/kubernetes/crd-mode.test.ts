// CRD mode on the real test cluster: the EditorServer objects of a namespace are the manifests.
// `kubectl apply` of the examples runs editors the proxy serves; a create through the API is an
// object; kubectl's edits and deletes are the service's; status is written through /status with
// the object's generation; a forged status is put back and a copied object takes nothing of the
// original's; a service with an empty data folder (a new controller Pod) adopts what runs.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectFile } from '../../src/core/project.ts';
import { kubectl, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { closeClusterService, editorContainer, editorPod, objectsOf, readyPod, startClusterService } from '../helpers/cluster-service.ts';
import { editorServer, forgeStatus, installCrd, releaseEditorServers } from '../helpers/crd.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually, request, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

const EXAMPLES = projectFile('manifests/examples');
/** A Pod's start, or a stop→start that waits out the old Pod's deletion (~10 s on 1.20). */
const POD_WAIT_MS = 90_000;

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let service: TestService;

/** The service's config in these tests: the examples' extension group exists, a file gone stops its editor soon. */
const config = {
  extensionGroups: { python: { name: 'python', description: 'Python', extensions: ['ms-python.python'], user_settings: {} } },
  controller: { orphanGraceSeconds: 2 },
};

function startService(root?: string): Promise<TestService> {
  return startClusterService(cluster!, ns, stubEditor(), { ...(root ? { root } : {}), config, kubernetes: { source: 'crd' } });
}

beforeAll(async () => {
  if (!cluster) return;
  await installCrd(cluster);
  namespace = await testNamespace(cluster, 'devbox-crd');
  ns = namespace.name;
  service = await startService();
}, 120_000);
afterAll(async () => {
  if (service) await closeClusterService(service);
  if (cluster && ns) await releaseEditorServers(cluster, ns);
  await namespace?.remove();
}, 120_000);

/** The server's list entry (GET /servers), by manifest name. */
async function listed(name: string): Promise<any> {
  const list: any[] = (await service.request('GET', '/servers')).body;
  return list.find((s) => s.manifest === name);
}

describe.skipIf(!cluster)(cluster ? 'EditorServer objects as the manifests' : `EditorServer objects as the manifests (${NO_CLUSTER})`, { timeout: 240_000 }, () => {
  it('runs every example applied with kubectl as an editor the proxy serves, and writes status through /status with the object\'s generation', async () => {
    const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) await kubectl(cluster!, ['apply', '-n', ns, '-f', join(EXAMPLES, file)]);
    for (const file of files) {
      const name = file.replace(/\.yaml$/, '');
      const object = await editorServer(cluster!, ns, name);
      const wanted = object.spec.running ? 'running' : 'stopped';
      const entry = await eventually(async () => {
        const found = await listed(name);
        return found?.status === wanted ? found : undefined;
      }, POD_WAIT_MS);
      // The object's uid is the server's id; status reached the object through /status.
      expect(entry.id).toBe(object.metadata.uid);
      const settled = await eventually(async () => {
        const now = await editorServer(cluster!, ns, name);
        return now.status?.phase === (object.spec.running ? 'Running' : 'Stopped') && now.status.observedGeneration === now.metadata.generation ? now : undefined;
      }, 30_000);
      // The finalizer holds a delete for cleanup once a server is asked to run; a stopped one has nothing on the cluster.
      if (object.spec.running) expect(settled.metadata.finalizers).toContain('devbox.dev/cleanup');
      else expect(settled.metadata.finalizers ?? []).toEqual([]);
      if (object.spec.running) {
        const page = await fetch(`${service.url}/vscode/${entry.port}/`);
        expect(page.status, name).toBe(200);
        expect(await page.text()).toContain('stub editor');
      }
    }
  });

  it('makes a create through the API an object, follows kubectl edits, and carries out kubectl delete (every object of the server gone)', async () => {
    const created = await service.request('POST', '/servers', { name: 'From the API', extensions: [] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const name = created.body.manifest ?? 'from-the-api';
    const object = await editorServer(cluster!, ns, name);
    expect(object.spec.displayName).toBe('From the API');
    expect(created.body.id).toBe(object.metadata.uid);

    // kubectl edits the spec: the generation moves, and the service follows it.
    await kubectl(cluster!, ['patch', 'editorserver', name, '-n', ns, '--type', 'merge', '-p', '{"spec":{"running":true}}']);
    await eventually(async () => (await readyPod(cluster!, ns, name)) ?? undefined, POD_WAIT_MS);
    const running = await eventually(async () => {
      const now = await editorServer(cluster!, ns, name);
      return now.status?.phase === 'Running' && now.status.observedGeneration === now.metadata.generation ? now : undefined;
    }, 30_000);
    expect(running.metadata.generation).toBeGreaterThan(object.metadata.generation);
    expect((await service.request('GET', `/servers/${created.body.id}`)).body.status).toBe('running');

    // kubectl delete is a delete: the dashboard's feed loses it, and nothing of it is left.
    await kubectl(cluster!, ['delete', 'editorserver', name, '-n', ns, '--wait=false']);
    await eventually(async () => ((await service.request('GET', `/servers/${created.body.id}`)).status === 404 ? true : undefined), POD_WAIT_MS);
    await eventually(async () => ((await editorServer(cluster!, ns, name)) === undefined ? true : undefined), POD_WAIT_MS);
    await eventually(async () => ((await objectsOf(cluster!, ns, name)).length === 0 ? true : undefined), POD_WAIT_MS);
  });

  it('puts back a forged status, and gives a copied object nothing of the original\'s (uid, port, editor)', async () => {
    await kubectl(cluster!, ['apply', '-n', ns, '-f', '-'], [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: original }', 'spec: { running: true, port: 9311 }',
    ].join('\n'));
    const before = await eventually(async () => readyPod(cluster!, ns, 'original'), POD_WAIT_MS);
    const settled = await eventually(async () => {
      const now = await editorServer(cluster!, ns, 'original');
      return now.status?.phase === 'Running' ? now : undefined;
    }, 30_000);

    await forgeStatus(cluster!, ns, 'original', { phase: 'Failed', reason: 'Forged', message: 'not the controller', runtimeRef: null });
    const restored = await eventually(async () => {
      const now = await editorServer(cluster!, ns, 'original');
      return now.status?.phase === 'Running' && now.status.reason !== 'Forged' ? now : undefined;
    }, 30_000);
    expect(restored.status.runtimeRef).toEqual(settled.status.runtimeRef);
    expect(service.lines.join('\n')).toMatch(/the status of editorserver\/original in namespace \S+ was not the controller's .*: put back/);

    // A copy: same spec (its port too) and the original's status, under another name.
    const copy = { apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'copy' }, spec: settled.spec };
    await kubectl(cluster!, ['create', '-n', ns, '-f', '-'], JSON.stringify(copy));
    await forgeStatus(cluster!, ns, 'copy', settled.status);
    const entry = await eventually(async () => {
      const found = await listed('copy');
      return found?.phase === 'Failed' && found.reason === 'PortUnavailable' ? found : undefined;
    }, 30_000);
    expect(entry.id).not.toBe(settled.metadata.uid);
    // The original's editor is untouched: the same Pod, never restarted.
    const after = await readyPod(cluster!, ns, 'original');
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(editorContainer(after).restartCount).toBe(0);
    expect(await editorPod(cluster!, ns, 'copy')).toBeUndefined();
  });

  it('keeps access: owner as with files: a create is owned by its creator on the object, and an object applied for someone else is theirs alone', async () => {
    const owners = await testNamespace(cluster!, 'devbox-crd-owner');
    const owned = await startClusterService(cluster!, owners.name, stubEditor(), { requireIdentity: true, config: { access: 'owner', admins: [] }, kubernetes: { source: 'crd' } });
    const ALICE = { 'X-Forwarded-Email': 'alice@example.com', 'X-Forwarded-User': '1001@42' };
    const BOB = { 'X-Forwarded-Email': 'bob@example.com', 'X-Forwarded-User': '1002@42' };
    try {
      const created = await request(owned.url, 'POST', '/servers', { name: 'Alice box', extensions: [] }, ALICE);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const object = await editorServer(cluster!, owners.name, 'alice-box');
      expect(object.metadata.annotations['devbox.dev/owner']).toBe('alice@example.com');
      // An object someone applies for Bob: Bob's server, which Alice neither sees nor drives.
      await kubectl(cluster!, ['apply', '-n', owners.name, '-f', '-'], JSON.stringify({
        apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'bob-box', annotations: { 'devbox.dev/owner': 'bob@example.com' } }, spec: { running: false },
      }));
      const bobs = await eventually(async () => {
        const list = (await request(owned.url, 'GET', '/servers', undefined, BOB)).body as any[];
        return list.find((s) => s.manifest === 'bob-box');
      }, 30_000);
      expect(bobs.owner).toBe('bob@example.com');
      expect(((await request(owned.url, 'GET', '/servers', undefined, ALICE)).body as any[]).map((s) => s.manifest)).toEqual(['alice-box']);
      expect((await request(owned.url, 'POST', `/servers/${bobs.id}/start`, undefined, ALICE)).status).toBe(404);
      expect((await editorServer(cluster!, owners.name, 'bob-box')).spec.running).toBe(false);
    } finally {
      await closeClusterService(owned);
      await releaseEditorServers(cluster!, owners.name);
      await owners.remove();
    }
  });

  it('adopts every running editor from the objects in a service with an empty data folder (a new controller Pod), with no restart', async () => {
    const pod = await eventually(async () => readyPod(cluster!, ns, 'hello'), POD_WAIT_MS);
    const id = (await listed('hello')).id;
    await closeClusterService(service);
    service = await startService();
    const entry = await eventually(async () => {
      const found = await listed('hello');
      return found?.status === 'running' ? found : undefined;
    }, 30_000);
    expect(entry.id).toBe(id);
    const after = await readyPod(cluster!, ns, 'hello');
    expect(after.metadata.uid).toBe(pod.metadata.uid);
    expect(editorContainer(after).restartCount).toBe(0);
    expect(service.lines.join('\n')).toMatch(/adopted running editor hello/);
  });
});
