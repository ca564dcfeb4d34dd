// CRD mode at the size of a course or a team, on the one-node test cluster: thousands of
// EditorServer objects landed at once with `running: false` (a GitOps sync of servers declared
// ahead of time), then a few dozen started. Measured: landed → every server listed by GET /servers
// as stopped, and the Pods that made (none is right); create + start → the editor's page through
// the proxy for 10 servers at once, against the process runtime in the same run, and the
// cluster's floor: 10 bare Pods of the same editor (no volume, no controller) applied at once
// until Ready; the API server's requests a minute at rest (by verb and resource, from its own
// apiserver_request_total, before and after a window), with the cluster's own baseline measured
// in the same run, what the service itself asks for, and its `pods/exec`. Needs the test cluster; skipped without one. Everything lives in a namespace of
// the bench's own, deleted at the end.
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { kubectl as kubectlWith, RUN_DIR, testCluster, type TestCluster } from '../test/helpers/cluster.ts';
import { installCrd } from '../test/helpers/crd.ts';
import { kubectl, runtimeOptions, stubEditor, testNamespace, TEST_IMAGE } from '../test/helpers/kube-runtime.ts';
import { parsePrometheusText } from '../test/helpers/prometheus.ts';
import { benchPorts, median, round, sleep, startBenchService, STUB_EDITOR, type BenchService } from './harness.ts';
import { poolConnections } from '../src/runtime/kubernetes/connection-pool.ts';
import { spread } from './kubernetes.ts';

const GROUP = { group: 'devbox.dev', version: 'v1alpha1', plural: 'editorservers' };
/** Objects created in parallel, as a GitOps tool's sync sends them. */
const CREATE_CONCURRENCY = 32;
const LISTED_TIMEOUT_MS = 300_000;
const RUNNING_TIMEOUT_MS = 300_000;
const PAGE_TIMEOUT_MS = 180_000;

type Counts = Map<string, number>;

/** The API server's requests so far, by `verb resource[/subresource]`, summed over codes and scopes. */
async function apiRequests(cluster: TestCluster): Promise<Counts> {
  const families = parsePrometheusText(`${await kubectl(cluster, 'get', '--raw', '/metrics')}\n`);
  const counts: Counts = new Map();
  for (const sample of families.get('apiserver_request_total')?.samples ?? []) {
    const { verb, resource, subresource } = sample.labels;
    const key = `${verb} ${resource}${subresource ? `/${subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + sample.value);
  }
  return counts;
}

/** Requests a minute in a window, by key (only those that grew), and their total. */
function perMinute(before: Counts, after: Counts, seconds: number): { total: number; by: Record<string, number> } {
  const by: Record<string, number> = {};
  let total = 0;
  for (const [key, value] of after) {
    const grew = value - (before.get(key) ?? 0);
    if (grew <= 0) continue;
    by[key] = round((grew * 60) / seconds, 1);
    total += grew;
  }
  return { total: round((total * 60) / seconds, 1), by: Object.fromEntries(Object.entries(by).sort(([, a], [, b]) => b - a)) };
}

/** A window of `seconds` with the API server's counts before and after. */
async function window(cluster: TestCluster, seconds: number): Promise<{ total: number; by: Record<string, number> }> {
  const before = await apiRequests(cluster);
  const began = performance.now();
  await sleep(seconds * 1000);
  const after = await apiRequests(cluster);
  return perMinute(before, after, (performance.now() - began) / 1000);
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function inParallel<T>(items: T[], concurrency: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

type Listed = Array<{ id: string; manifest: string; port: number; status: string }>;

/** Polls GET /servers until `test` passes; ms from `since`. */
async function listedUntil(service: BenchService, since: number, timeoutMs: number, what: string, test: (list: Listed) => boolean): Promise<number> {
  for (;;) {
    const list = (await service.call('GET', '/servers')) as Listed;
    if (Array.isArray(list) && test(list)) return performance.now() - since;
    if (performance.now() - since > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

/** POST /servers and /start, then the editor's page through the proxy until it answers 200; ms. */
async function createToPage(service: BenchService, name: string): Promise<number> {
  const began = performance.now();
  const { id, port } = await service.call('POST', '/servers', { name, extensions: [] });
  await service.call('POST', `/servers/${id}/start`);
  for (;;) {
    const res = await fetch(`${service.url}/vscode/${port}/`, { redirect: 'manual' }).catch(() => undefined);
    if (res?.status === 200 && (await res.text())) return performance.now() - began;
    if (performance.now() - began > PAGE_TIMEOUT_MS) throw new Error(`"${name}": no page through the proxy within ${PAGE_TIMEOUT_MS / 1000} s`);
    await sleep(50);
  }
}

/** `count` at once: each one's ms and the whole. */
async function createAll(service: BenchService, prefix: string, count: number): Promise<{ each: number[]; wallMs: number }> {
  const began = performance.now();
  const each = await Promise.all(Array.from({ length: count }, (_, i) => createToPage(service, `${prefix} ${i}`)));
  return { each, wallMs: performance.now() - began };
}

async function deleteServers(service: BenchService, prefix: string): Promise<void> {
  const list = (await service.call('GET', '/servers')) as Array<{ id: string; name: string }>;
  await Promise.all(list.filter((s) => s.name.startsWith(prefix)).map(async ({ id }) => {
    await service.call('DELETE', `/servers/${id}`);
    const deadline = Date.now() + PAGE_TIMEOUT_MS;
    while ((await fetch(`${service.url}/servers/${id}`)).status !== 404 && Date.now() < deadline) await sleep(250);
  }));
}

/**
 * Requests only the service makes (its watches and lists, its objects, the kubelet summaries, exec
 * and logs), against those the cluster makes for the Pods it runs: on this cluster the kubelet's
 * sync of each Pod (once a minute) reads its claim and volume and records MissingClusterDNS (the
 * test cluster has no DNS).
 */
const SERVICE_REQUESTS = /^(WATCH|LIST) (pods|events|editorservers)$|editorservers|^GET nodes\/proxy$|pods\/(exec|log)$|statefulsets|^(PATCH|POST|DELETE) (pods|configmaps|services|persistentvolumeclaims)$/;

/** The requests a minute the service itself adds over the cluster's baseline, by key. */
function serviceOwn(rest: Record<string, number>, baseline: Record<string, number>): { total: number; by: Record<string, number> } {
  const by: Record<string, number> = {};
  for (const [key, value] of Object.entries(rest)) {
    const own = round(value - (baseline[key] ?? 0), 1);
    if (SERVICE_REQUESTS.test(key) && own > 0) by[key] = own;
  }
  return { total: round(Object.values(by).reduce((a, b) => a + b, 0), 1), by };
}

/**
 * The cluster's floor for the page: `count` bare Pods of the same editor (image, mounts, command,
 * requests) applied at once, without a volume or a controller, until each is Ready (its /healthz
 * readiness probe); ms for the whole.
 */
async function barePods(cluster: TestCluster, namespace: string, count: number, port: number): Promise<number> {
  const editor = stubEditor();
  const pod = (i: number) => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: `bare-${i}`, labels: { bench: 'bare' } },
    spec: {
      automountServiceAccountToken: false, enableServiceLinks: false, terminationGracePeriodSeconds: 1,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000 },
      containers: [{
        name: 'editor', image: TEST_IMAGE, imagePullPolicy: 'Never', command: editor.command,
        args: ['--bind-addr', `0.0.0.0:${port}`, '--auth', 'none', '/tmp'],
        env: [{ name: 'HOME', value: '/tmp' }],
        readinessProbe: { httpGet: { path: '/healthz', port }, periodSeconds: 1 },
        resources: { requests: { cpu: '50m', memory: '64Mi' } },
        volumeMounts: editor.extraMounts.map((m) => ({ name: m.name, mountPath: m.mountPath, readOnly: true })),
      }],
      volumes: editor.extraMounts.map((m) => ({ name: m.name, hostPath: m.hostPath })),
    },
  });
  const began = performance.now();
  await kubectlWith(cluster, ['apply', '-n', namespace, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Array.from({ length: count }, (_, i) => pod(i)) }));
  for (;;) {
    const pods = JSON.parse(await kubectl(cluster, 'get', 'pods', '-n', namespace, '-l', 'bench=bare', '-o', 'json')) as { items: Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }> };
    if (pods.items.length === count && pods.items.every((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))) break;
    if (performance.now() - began > PAGE_TIMEOUT_MS) throw new Error(`${count} bare Pods not Ready within ${PAGE_TIMEOUT_MS / 1000} s`);
    await sleep(100);
  }
  const ms = performance.now() - began;
  await kubectl(cluster, 'delete', 'pods', '-n', namespace, '-l', 'bench=bare', '--wait=true', '--timeout=120s');
  return ms;
}

const podCount = async (cluster: TestCluster, namespace: string) =>
  (JSON.parse(await kubectl(cluster, 'get', 'pods', '-n', namespace, '-o', 'json')) as { items: unknown[] }).items.length;

/**
 * `quick`: 500 objects, 10 started, windows of 20 s, instead of 2,000, 30 and 60 s. Returns the
 * figures as plain data (or `{ skipped }` without a cluster): `landed`, `create_to_page`,
 * `at_rest`, `deleted`.
 */
export async function benchCrdScale(quick: boolean, offset: number, options: { windowSeconds?: number } = {}) {
  const cluster = await testCluster();
  if (!cluster) return { skipped: `no Kubernetes test cluster answers (${RUN_DIR}): the crd-scale section is skipped; \`scripts/test-cluster.sh up\` (root) starts one (docs/kubernetes-test-cluster.md)` };
  const objects = quick ? 500 : 2000;
  const running = quick ? 10 : 30;
  const windowSeconds = options.windowSeconds ?? (quick ? 20 : 60);
  await installCrd(cluster);
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  // Connections kept and reused, as a GitOps tool's client (client-go) does: the library's default
  // is a new TLS connection per call, which made the bench's own creates the slow part.
  poolConnections(config);
  const api = config.makeApiClient(CustomObjectsApi);
  const namespace = await testNamespace(cluster, 'devbox-bench-scale');
  const ns = namespace.name;
  const services: BenchService[] = [];
  try {
    // The cluster's own requests (kubelet, controllers, leases), before any service of ours.
    const baseline = await window(cluster, windowSeconds);
    const kubernetes = { ...runtimeOptions(ns, stubEditor(), cluster), source: 'crd' };
    // On a cluster a port is only a route number: a range with room for every server.
    const pods = await startBenchService(STUB_EDITOR, benchPorts(offset, objects + 600), { config: { runtime: { kind: 'kubernetes', kubernetes } } });
    services.push(pods);
    const processes = await startBenchService(STUB_EDITOR, benchPorts(offset + Math.ceil((objects + 600) / 200)));
    services.push(processes);

    // 1. Landed at once (stopped) → every one listed as stopped.
    const names = Array.from({ length: objects }, (_, i) => `declared-${i}`);
    const landing = await apiRequests(cluster);
    const began = performance.now();
    await inParallel(names, CREATE_CONCURRENCY, (name) => api.createNamespacedCustomObject({
      ...GROUP, namespace: ns, body: { apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec: { displayName: name, running: false } },
    }));
    const appliedMs = performance.now() - began;
    const listedMs = await listedUntil(pods, began, LISTED_TIMEOUT_MS, `${objects} objects listed as stopped`,
      (list) => list.filter((s) => s.manifest.startsWith('declared-') && s.status === 'stopped').length === objects);
    const landedRequests = perMinute(landing, await apiRequests(cluster), 60);
    const podsAfterLanding = await podCount(cluster, ns);
    const rssLanded = pods.rssMb();

    // 2. Create + start → page, 10 at once, on each runtime, the order alternating.
    const rounds = quick ? 1 : 2;
    const wall = { kubernetes: [] as number[], process: [] as number[] };
    const each = { kubernetes: [] as number[], process: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      for (const [kind, service] of (r % 2 === 0 ? [['kubernetes', pods], ['process', processes]] : [['process', processes], ['kubernetes', pods]]) as Array<['kubernetes' | 'process', BenchService]>) {
        const made = await createAll(service, `page ${r}`, 10);
        wall[kind].push(made.wallMs);
        each[kind].push(...made.each);
        await deleteServers(service, `page ${r}`);
      }
    }

    // The cluster's floor for the same 10, in the same run.
    const floor: number[] = [];
    for (let r = 0; r < rounds; r++) floor.push(await barePods(cluster, ns, 10, 8080));

    // 3. `running` of the objects started; then the API server at rest.
    const startedAt = performance.now();
    await inParallel(names.slice(0, running), CREATE_CONCURRENCY, (name) => api.patchNamespacedCustomObject(
      { ...GROUP, namespace: ns, name, body: { spec: { running: true } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ));
    const runningMs = await listedUntil(pods, startedAt, RUNNING_TIMEOUT_MS, `${running} objects running`,
      (list) => list.filter((s) => s.status === 'running').length === running);
    // Their settle (first health checks, usage samples) is not rest: a few seconds go by first.
    await sleep(10_000);
    const rest = await window(cluster, windowSeconds);
    const execs = Object.entries(rest.by).filter(([key]) => key.endsWith(' pods/exec')).reduce((sum, [, n]) => sum + n, 0);
    const ours = round(rest.total - baseline.total, 1);
    const own = serviceOwn(rest.by, baseline.by);

    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    return {
      objects,
      running,
      landed: {
        created_in_ms: round(appliedMs, 0),
        // From the first create to every object listed by GET /servers with status stopped.
        listed_stopped_ms: round(listedMs, 0),
        pods: podsAfterLanding,
        api_requests_while_landing: landedRequests.total,
        service_rss_mb: round(rssLanded, 1),
      },
      create_to_page: {
        servers_at_once: 10,
        rounds,
        kubernetes: { wall_ms: wall.kubernetes.map((ms) => round(ms, 0)), per_server: spread(each.kubernetes) },
        process: { wall_ms: wall.process.map((ms) => round(ms, 0)), per_server: spread(each.process) },
        // 10 bare Pods of the same editor applied at once until Ready: what the node itself takes.
        floor_bare_pods_ms: floor.map((ms) => round(ms, 0)),
        wall_ratio_kubernetes_to_process: round(sum(wall.kubernetes) / sum(wall.process), 2),
        wall_ratio_kubernetes_to_floor: round(sum(wall.kubernetes) / sum(floor), 2),
        per_server_median_ratio: round(median(each.kubernetes) / median(each.process), 2),
      },
      at_rest: {
        started_to_running_ms: round(runningMs, 0),
        window_s: windowSeconds,
        requests_per_minute: rest.total,
        baseline_per_minute: baseline.total,
        // Everything above the cluster's own baseline (which had no service and no Pod): the
        // service's requests and what the kubelet and controllers do for the running Pods.
        above_baseline_per_minute: ours,
        // The requests only the service makes (SERVICE_REQUESTS), above the baseline.
        service_own_per_minute: own.total,
        service_own_per_running_editor_per_minute: round(own.total / running, 2),
        service_own_by_verb_and_resource: own.by,
        pods_exec_per_minute: execs,
        by_verb_and_resource: rest.by,
        baseline_by_verb_and_resource: baseline.by,
        service_rss_mb: round(pods.rssMb(), 1),
      },
    };
  } finally {
    for (const service of services) await service.close();
    // The controller is gone: its finalizers are taken off so the namespace can go.
    const left = (await kubectl(cluster, 'get', 'editorservers', '-n', ns, '-o', 'name').catch(() => '')).split('\n').filter(Boolean).map((n) => n.split('/')[1]);
    await inParallel(left, CREATE_CONCURRENCY, (name) => api.patchNamespacedCustomObject(
      { ...GROUP, namespace: ns, name, body: { metadata: { finalizers: null } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ).catch(() => undefined));
    await namespace.remove();
  }
}
