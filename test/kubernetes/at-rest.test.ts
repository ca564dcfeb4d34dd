// What a fleet costs the cluster when nobody uses it, on the real test cluster in CRD mode:
// EditorServer objects applied at once with `running: false`, and servers created through the
// API, make nothing on the cluster (no Pod, no claim, no StatefulSet, no anchor) and say Stopped,
// with one status write each, their git sources not cloned; a start makes the editor's own Pod
// and no other (its init container prepares the volume; the source, settings and extensions go in
// once it runs); then, with the
// controller reconciling every server again and again, the API server sees no `pods/exec`, no
// status write and no Pod made. Counted from the API server's own `apiserver_request_total`.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, kubectl, NO_CLUSTER, testCluster, type TestCluster } from '../helpers/cluster.ts';
import { closeClusterService, startClusterService, volumeOf } from '../helpers/cluster-service.ts';
import { installCrd, releaseEditorServers } from '../helpers/crd.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { conformanceSources, type ConformanceSources } from '../runtime/conformance-sources.ts';
import { parsePrometheusText } from '../helpers/prometheus.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

/** Objects applied at once, and servers created through the API, all stopped. */
const OBJECTS = 12;
const CREATED = 3;
const SETTLE_MS = 180_000;

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let service: TestService;
/** Every Pod name the namespace ever had while the test ran, from a watch opened before anything was made. */
const podsSeen = new Set<string>();
let podWatch: AbortController | undefined;
/** A git repository on loopback (git daemon): the service clones it and ships it into the volume. */
let sources: ConformanceSources;

beforeAll(async () => {
  if (!cluster) return;
  await installCrd(cluster);
  sources = await conformanceSources();
  namespace = await testNamespace(cluster, 'devbox-rest');
  ns = namespace.name;
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  podWatch = await new Watch(config).watch(`/api/v1/namespaces/${ns}/pods`, {}, (_type, pod: { metadata?: { name?: string } }) => {
    if (pod.metadata?.name) podsSeen.add(pod.metadata.name);
  }, () => {});
  // A resync every 2 s: at rest the controller still looks at every server, over and over.
  service = await startClusterService(cluster, ns, stubEditor(), { config: { controller: { resyncSeconds: 2 }, workspace: { gitSchemes: ['git'], cloneTimeoutSeconds: 60, maxUploadMb: 10 } }, kubernetes: { source: 'crd' } });
}, 120_000);
afterAll(async () => {
  podWatch?.abort();
  if (service) await closeClusterService(service);
  if (cluster && ns) await releaseEditorServers(cluster, ns);
  await namespace?.remove();
  await sources?.stop();
}, 180_000);

/** The API server's request counts, by `verb resource/subresource`, summed over codes and scopes. */
async function apiRequests(c: TestCluster): Promise<Map<string, number>> {
  const families = parsePrometheusText(`${await kubectl(c, ['get', '--raw', '/metrics'])}\n`);
  const counts = new Map<string, number>();
  for (const sample of families.get('apiserver_request_total')?.samples ?? []) {
    const { verb, resource, subresource } = sample.labels;
    const key = `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + sample.value);
  }
  return counts;
}

/** How many more requests of `key` (`verb resource/subresource`, or `* resource/subresource` for any verb) the second count has. */
function grew(before: Map<string, number>, after: Map<string, number>, key: string): number {
  const matches = (k: string) => (key.startsWith('* ') ? k.endsWith(key.slice(1)) : k === key);
  const sum = (counts: Map<string, number>) => [...counts].filter(([k]) => matches(k)).reduce((total, [, v]) => total + v, 0);
  return sum(after) - sum(before);
}

/** The service's count of reconciles so far. */
async function reconciles(): Promise<number> {
  const res = await fetch(`${service.url}/metrics`);
  const families = parsePrometheusText(await res.text());
  return families.get('devbox_reconcile_duration_seconds')?.samples.find((s) => s.name === 'devbox_reconcile_duration_seconds_count')?.value ?? 0;
}

const objectsOfKind = async (kind: string, selector = 'app.kubernetes.io/managed-by=devbox-controller') =>
  (await getObject<{ items: unknown[] }>(cluster!, [kind, '-n', ns, '-l', selector]))?.items.length ?? 0;

function manifest(name: string): string {
  return [
    'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', `metadata: {name: ${name}}`,
    'spec:', `  displayName: ${name}`, '  running: false', '  extensions: [acme.tool]', '  settings: {"editor.fontSize": 13}',
    `  workspace: {source: {git: {url: "${sources.git.source.git.url}"}}}`,
  ].join('\n');
}

describe.skipIf(!cluster)(cluster ? 'a fleet at rest on the cluster' : `a fleet at rest on the cluster (${NO_CLUSTER})`, { timeout: 400_000 }, () => {
  it('makes nothing on the cluster for stopped servers, only the editor\'s own Pod at a start, and no exec at rest', async () => {
    const c = cluster!;
    const names = Array.from({ length: OBJECTS }, (_, i) => `idle-${i}`);
    const before = await apiRequests(c);
    await kubectl(c, ['apply', '-n', ns, '-f', '-'], names.map(manifest).join('\n---\n'));
    for (let i = 0; i < CREATED; i++) {
      const created = await service.request('POST', '/servers', { name: `Created ${i}`, extensions: [] });
      expect(created.status).toBe(201);
    }

    // 1. Every server listed, stopped, and every object's status says so.
    await eventually(async () => {
      const list: Array<{ status: string }> = (await service.request('GET', '/servers')).body;
      return list.length === OBJECTS + CREATED && list.every((s) => s.status === 'stopped');
    }, SETTLE_MS, 250);
    const objects = await eventually(async () => {
      const found = await getObject<{ items: Array<{ metadata: { name: string }; status?: { phase?: string } }> }>(c, ['editorservers', '-n', ns]);
      return found?.items.length === OBJECTS + CREATED && found.items.every((o) => o.status?.phase === 'Stopped') && found.items;
    }, SETTLE_MS, 250);
    expect(objects.map((o) => o.status?.phase)).toEqual(Array(OBJECTS + CREATED).fill('Stopped'));
    const settled = await apiRequests(c);
    // Nothing on the cluster for them: no Pod (not even for a moment), no claim, no StatefulSet, no anchor.
    expect([...podsSeen]).toEqual([]);
    for (const kind of ['pods', 'pvc', 'statefulsets', 'services', 'configmaps']) expect(await objectsOfKind(kind), kind).toBe(0);
    expect(grew(before, settled, '* pods/exec'), 'no exec').toBe(0);
    // One status write per object and transition (to Stopped), coalesced; none for nothing.
    const statusWrites = grew(before, settled, 'PATCH editorservers/status');
    console.log(`${OBJECTS + CREATED} stopped servers settled: ${statusWrites} status writes; requests meanwhile: ${JSON.stringify(Object.fromEntries([...settled].map(([k, v]) => [k, v - (before.get(k) ?? 0)]).filter(([, v]) => (v as number) > 0)))}`);
    expect(statusWrites).toBeLessThanOrEqual(OBJECTS + CREATED);
    // Nor a write of the objects themselves: the cleanup finalizer waits for a start.
    expect(grew(before, settled, 'PUT editorservers'), 'no finalizer written for a server never asked to run').toBe(0);

    // 2. One starts: its editor's Pod, and no other, comes up; its settings and extension go in once it runs.
    const started = names[0];
    await kubectl(c, ['patch', 'editorserver', started, '-n', ns, '--type', 'merge', '-p', '{"spec":{"running":true}}']);
    const object = await eventually(async () => {
      const found = await getObject(c, ['editorserver', started, '-n', ns]);
      const condition = found?.status?.conditions?.find((x: { type: string }) => x.type === 'ExtensionsInstalled');
      return found?.status?.phase === 'Running' && condition && condition.reason !== 'Installing' && found;
    }, SETTLE_MS, 250);
    expect(object.status.extensions).toEqual([expect.objectContaining({ id: 'acme.tool', state: 'Installed' })]);
    await eventually(async () => {
      const found = await getObject(c, ['editorserver', started, '-n', ns]);
      return found?.status?.phase === 'Running' && found.status.conditions?.some((x: { type: string; reason: string }) => x.type === 'WorkspaceReady' && x.reason === 'Populated');
    }, SETTLE_MS, 250);
    const volume = await volumeOf(c, ns, started);
    expect(await fs.readFile(join(volume!.folder, 'workspace', sources.git.file), 'utf8'), 'the git source, cloned at the first start').toBe(sources.git.content);
    const settings = await eventually(async () => fs.readFile(join(volume!.folder, 'editor', 'data', 'User', 'settings.json'), 'utf8').catch(() => undefined), 60_000, 250);
    expect(JSON.parse(settings)).toMatchObject({ 'editor.fontSize': 13 });
    expect([...podsSeen], 'the editor\'s own Pod and no helper').toEqual([`devbox-${started}-0`]);
    expect(await objectsOfKind('pvc'), 'a claim for the one that started').toBe(1);

    // 3. At rest: the controller reconciles every server several times over (a resync every 2 s),
    // and the API server sees no exec, no status write and no Pod made.
    const rest = await apiRequests(c);
    const restReconciles = await reconciles();
    const restBegan = Date.now();
    await eventually(async () => (await reconciles()) - restReconciles >= 3 * (OBJECTS + CREATED), 120_000, 500);
    const after = await apiRequests(c);
    const window = (Date.now() - restBegan) / 1000;
    const changed = Object.fromEntries([...after].map(([k, v]) => [k, v - (rest.get(k) ?? 0)]).filter(([, v]) => (v as number) > 0));
    console.log(`at rest for ${window.toFixed(1)} s, ${(await reconciles()) - restReconciles} reconciles: API-server requests (every client) ${JSON.stringify(changed)}`);
    expect(grew(rest, after, '* pods/exec'), 'no exec at rest').toBe(0);
    expect(grew(rest, after, 'PATCH editorservers/status'), 'no status write at rest').toBe(0);
    expect(grew(rest, after, 'CREATE pods') + grew(rest, after, 'PATCH pods'), 'no Pod made or changed at rest').toBe(0);
    expect([...podsSeen]).toEqual([`devbox-${started}-0`]);
  });
});
