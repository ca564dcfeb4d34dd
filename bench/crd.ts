// EditorServer objects as the manifests against manifest files, side by side on the test cluster:
// the same service build twice, editors as Pods on both, one reading a manifests folder and one
// the namespace's EditorServer objects (runtime.kubernetes.source: crd). Measured: a server
// declared (a file written; an object created) → its editor's page through the proxy, for
// `servers` at once; how far the object's status (written through /status) lags the API's record
// of the same change; DELETE → the server gone (on the objects' side, the object released too);
// the services' memory with the editors running. Needs the test cluster; skipped without one.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import { RUN_DIR, testCluster, type TestCluster } from '../test/helpers/cluster.ts';
import { installCrd, releaseEditorServers } from '../test/helpers/crd.ts';
import { runtimeOptions, stubEditor, testNamespace } from '../test/helpers/kube-runtime.ts';
import { benchPorts, round, sleep, startBenchService, STUB_EDITOR, type BenchService } from './harness.ts';
import { spread } from './kubernetes.ts';

type Source = 'files' | 'crd';

interface Side {
  source: Source;
  namespace: string;
  service: BenchService;
  /** When each object's status first said Running (crd side), by name. */
  objectRunning: Map<string, number>;
}

const PAGE_TIMEOUT_MS = 180_000;

function manifestOf(name: string): Record<string, unknown> {
  return { apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec: { displayName: name, running: true } };
}

/** Declares the server (a file, or an object) and waits for its page through the proxy; ms for both, and when the API first said running. */
async function declareOne(side: Side, name: string, objects: CustomObjectsApi): Promise<{ pageMs: number; apiRunningAt: number }> {
  const began = performance.now();
  if (side.source === 'files') {
    const dir = join(side.service.root, 'manifests');
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(join(dir, `.${name}.tmp`), JSON.stringify(manifestOf(name)));
    await fs.rename(join(dir, `.${name}.tmp`), join(dir, `${name}.yaml`));
  } else {
    await objects.createNamespacedCustomObject({ group: 'devbox.dev', version: 'v1alpha1', namespace: side.namespace, plural: 'editorservers', body: manifestOf(name) });
  }
  let apiRunningAt: number | undefined;
  for (;;) {
    const list = (await side.service.call('GET', '/servers')) as Array<{ manifest: string; port: number; status: string }>;
    const record = list.find((r) => r.manifest === name);
    if (record?.status === 'running') {
      apiRunningAt ??= performance.now();
      const res = await fetch(`${side.service.url}/vscode/${record.port}/`).catch(() => undefined);
      if (res?.status === 200 && (await res.text())) return { pageMs: performance.now() - began, apiRunningAt };
    }
    if (performance.now() - began > PAGE_TIMEOUT_MS) throw new Error(`${side.source} ${name}: no page within ${PAGE_TIMEOUT_MS / 1000} s`);
    await sleep(50);
  }
}

/** DELETE /servers/{id} of every server, each until GET answers 404 and (crd) its object is gone. */
async function deleteAll(side: Side, objects: CustomObjectsApi): Promise<number[]> {
  const list = (await side.service.call('GET', '/servers')) as Array<{ id: string; manifest: string }>;
  return Promise.all(list.map(async ({ id, manifest }) => {
    const began = performance.now();
    await side.service.call('DELETE', `/servers/${id}`);
    for (;;) {
      const gone = (await fetch(`${side.service.url}/servers/${id}`)).status === 404
        && (side.source === 'files' || (await objects.getNamespacedCustomObject({ group: 'devbox.dev', version: 'v1alpha1', namespace: side.namespace, plural: 'editorservers', name: manifest }).then(() => false, () => true)));
      if (gone) return performance.now() - began;
      if (performance.now() - began > PAGE_TIMEOUT_MS) throw new Error(`${side.source} ${manifest}: not gone within ${PAGE_TIMEOUT_MS / 1000} s of its DELETE`);
      await sleep(100);
    }
  }));
}

/** The bench's own watch of the crd side's objects: when each object's status first said Running. */
async function watchObjects(cluster: TestCluster, side: Side): Promise<AbortController> {
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  return new Watch(config).watch(`/apis/devbox.dev/v1alpha1/namespaces/${side.namespace}/editorservers`, {}, (_type, object: { metadata: { name: string }; status?: { phase?: string } }) => {
    if (object.status?.phase === 'Running' && !side.objectRunning.has(object.metadata.name)) side.objectRunning.set(object.metadata.name, performance.now());
  }, () => {});
}

/** `quick`: one round of 5 servers a side instead of two. */
export async function benchCrd(quick: boolean, offset: number, servers = 5) {
  const cluster = await testCluster();
  if (!cluster) return { skipped: `no Kubernetes test cluster answers (${RUN_DIR}): the crd section is skipped; \`scripts/test-cluster.sh up\` (root) starts one (docs/kubernetes-test-cluster.md)` };
  await installCrd(cluster);
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  const objects = config.makeApiClient(CustomObjectsApi);
  const namespaces = [await testNamespace(cluster, 'devbox-bench-files'), await testNamespace(cluster, 'devbox-bench-crd')];
  const sides: Side[] = [];
  const watches: AbortController[] = [];
  try {
    for (const [i, source] of (['files', 'crd'] as const).entries()) {
      const namespace = namespaces[i].name;
      const kubernetes = { ...runtimeOptions(namespace, stubEditor(), cluster), source };
      const service = await startBenchService(STUB_EDITOR, benchPorts(offset + i), { config: { runtime: { kind: 'kubernetes', kubernetes } } });
      sides.push({ source, namespace, service, objectRunning: new Map() });
    }
    watches.push(await watchObjects(cluster, sides[1]));
    const rounds = quick ? 1 : 2;
    const page: Record<Source, number[]> = { files: [], crd: [] };
    const wall: Record<Source, number[]> = { files: [], crd: [] };
    const removal: Record<Source, number[]> = { files: [], crd: [] };
    const statusLag: number[] = [];
    const rss: Record<Source, number[]> = { files: [], crd: [] };
    for (let r = 0; r < rounds; r++) {
      // The order alternates, so drift and load fall on both sides alike.
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const began = performance.now();
        const made = await Promise.all(Array.from({ length: servers }, (_, n) => declareOne(side, `${side.source}-${r}-${n}`, objects)
          .then((m) => ({ name: `${side.source}-${r}-${n}`, ...m }))));
        wall[side.source].push(performance.now() - began);
        page[side.source].push(...made.map((m) => m.pageMs));
        if (side.source === 'crd') {
          // The object's status may come after the page: waited for, bounded.
          const until = performance.now() + 30_000;
          while (made.some((m) => !side.objectRunning.has(m.name)) && performance.now() < until) await sleep(50);
          for (const m of made) {
            const at = side.objectRunning.get(m.name);
            if (at !== undefined) statusLag.push(at - m.apiRunningAt);
          }
        }
        rss[side.source].push(side.service.rssMb());
        removal[side.source].push(...(await deleteAll(side, objects)));
      }
    }
    const ratio = (a: number[], b: number[]) => round(a.reduce((x, y) => x + y, 0) / b.reduce((x, y) => x + y, 0), 2);
    return {
      servers_at_once: servers,
      rounds,
      declared_to_page: { files: spread(page.files), crd: spread(page.crd) },
      wall_ms: { files: wall.files.map((ms) => round(ms, 0)), crd: wall.crd.map((ms) => round(ms, 0)) },
      wall_crd_over_files: ratio(wall.crd, wall.files),
      // From the first GET /servers that said running to the object's first status with phase Running, on the bench's watch (negative: the object said it first).
      object_status_after_api: spread(statusLag),
      delete_to_gone: { files: spread(removal.files), crd: spread(removal.crd) },
      rss_mb_with_editors: { files: rss.files.map((mb) => round(mb, 1)), crd: rss.crd.map((mb) => round(mb, 1)) },
    };
  } finally {
    for (const watch of watches) watch.abort();
    for (const side of sides) await side.service.close();
    for (const namespace of namespaces) {
      await releaseEditorServers(cluster, namespace.name);
      await namespace.remove();
    }
  }
}
