// Editors as Pods against editors as local processes, side by side in one run: the same service
// build twice, one per runtime. Measured: create → the editor's page answered through the proxy
// for 10 servers at once; how soon a change of an editor (its container killed, its Pod deleted)
// shows in the server's status, with a killed local process as the floor; the service's memory
// with 10 editors on each. Needs the test cluster (docs/kubernetes-test-cluster.md): without one
// the section says why and is skipped. The Pods live in a namespace of the bench's own, deleted
// at the end.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, Watch, type V1Pod } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/kubernetes/client.ts';
import { RUN_DIR, testCluster, type TestCluster } from '../test/helpers/cluster.ts';
import { killContainer, kubectl, realEditor, runtimeOptions, stubEditor, testNamespace } from '../test/helpers/kube-runtime.ts';
import { bareNodeRssMb, benchPorts, median, percentile, round, sharedMemoryMb, sleep, startBenchService, STUB_EDITOR, type BenchService } from './harness.ts';
import { connectionsTo } from './service-proxy.ts';

type RuntimeKind = 'process' | 'kubernetes';

interface ServerRecord {
  id: string;
  manifest: string;
  port: number;
  status: string;
  pid: number | null;
  start_time: string | null;
  workspace_path: string | null;
}

/** One service under test and what runs its editors. */
interface Side {
  runtime: RuntimeKind;
  service: BenchService;
}

/** Create → page, per server; a recovery after a fault; the namespace going: each bounded. */
const PAGE_TIMEOUT_MS = 180_000;
const CHANGE_TIMEOUT_MS = 30_000;
const RECOVER_TIMEOUT_MS = 180_000;
const NAMESPACE_GONE_MS = 180_000;

/** The latest value of each key as a stream delivers it, and waits for one to pass a test. */
class Latest<T> {
  readonly values = new Map<string, T>();
  readonly #waiters = new Set<(at: number) => void>();

  /** A value (undefined: the key is gone) that arrived at `at` (performance.now()). */
  set(key: string, value: T | undefined, at: number): void {
    if (value === undefined) this.values.delete(key);
    else this.values.set(key, value);
    // Each message on its own: a passing state followed at once by another still counts.
    for (const waiter of this.#waiters) waiter(at);
  }

  /** When the value of `key` first passes `test` (now, if it does already), the moment its bytes arrived. */
  until(key: string, test: (value: T | undefined) => boolean, timeoutMs: number, what: string): Promise<number> {
    if (test(this.values.get(key))) return Promise.resolve(performance.now());
    return new Promise((resolve, reject) => {
      const check = (at: number) => {
        if (!test(this.values.get(key))) return;
        done();
        resolve(at);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${what}: not within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
    });
  }
}

/** A service's watch stream (GET /servers?watch=1), read as it comes: each server's latest record. */
class RecordWatch {
  readonly records = new Latest<ServerRecord>();
  readonly #abort = new AbortController();

  static async open(base: string): Promise<RecordWatch> {
    const watch = new RecordWatch();
    const res = await fetch(`${base}/servers?watch=1`, { signal: watch.#abort.signal });
    if (res.status !== 200 || !res.body) throw new Error(`GET /servers?watch=1: ${res.status}`);
    const synced = new Promise<void>((resolve, reject) => {
      void watch.#read(res.body!, resolve).then(() => reject(new Error('the watch stream ended before SYNCED')), reject);
    });
    await withTimeout(synced, 10_000, 'the watch stream\'s SYNCED');
    return watch;
  }

  async #read(body: ReadableStream<Uint8Array>, onSynced: () => void): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        const at = performance.now();
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const data = buffer.slice(0, end).split('\n').find((line) => line.startsWith('data: '));
          buffer = buffer.slice(end + 2);
          if (!data) continue; // `: ping`
          const { type, object } = JSON.parse(data.slice(6)) as { type: string; object: ServerRecord };
          if (type === 'SYNCED') onSynced();
          else this.records.set(object.id, type === 'DELETED' ? undefined : object, at);
        }
      }
    } catch (error) {
      if (!this.#abort.signal.aborted) throw error;
    }
  }

  close(): void {
    this.#abort.abort();
  }
}

/**
 * The bench's own watch of the namespace's Pods, beside the service's: when the cluster itself
 * said what happened to an editor (the kubelet's report of its container, the Pod's deletion),
 * the floor under the service's figure. Opened again when it ends (an API server restart), a
 * bounded number of times.
 */
class PodWatch {
  readonly pods = new Latest<V1Pod>();
  #abort: AbortController | undefined;
  #closed = false;
  #opens = 0;

  static async open(kubeconfig: string, namespace: string): Promise<PodWatch> {
    const config = new KubeConfig();
    config.loadFromFile(kubeconfig);
    const watch = new PodWatch();
    await watch.#open(new Watch(config), `/api/v1/namespaces/${namespace}/pods`);
    return watch;
  }

  async #open(watch: Watch, path: string): Promise<void> {
    if (this.#closed || ++this.#opens > 100) return;
    this.#abort = await watch.watch(path, {}, (type, pod: V1Pod) => {
      this.pods.set(pod.metadata!.name!, type === 'DELETED' ? undefined : pod, performance.now());
    }, () => void sleep(1000).then(() => this.#open(watch, path)).catch(() => {}));
  }

  close(): void {
    this.#closed = true;
    this.#abort?.abort();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The API server's process, from the cluster's pid file ('down' when it does not run; 'unknown'
 * without the file): others restart it for a few seconds at times, and a figure taken across such
 * a restart measures the outage, not the runtime.
 */
function apiServer(cluster: TestCluster): string {
  let pid: string;
  try {
    pid = readFileSync(join(cluster.runDir, 'pids', 'kube-apiserver.pid'), 'utf8').trim();
  } catch {
    return 'unknown';
  }
  return existsSync(`/proc/${pid}`) ? pid : 'down';
}

// --- 1. Create → the editor's page through the proxy ---

/** POST /servers, POST /start, then the editor's page through /vscode/{port}/ until it answers 200. */
async function createOne(side: Side, name: string): Promise<{ id: string; createdAt: number; startAnsweredMs: number; pageMs: number }> {
  const { service } = side;
  const createdAt = Date.now();
  const began = performance.now();
  const { id, port } = await service.call('POST', '/servers', { name, restart_policy: 'Always' });
  await service.call('POST', `/servers/${id}/start`); // 200 running, or 202 still starting
  const startAnsweredMs = performance.now() - began;
  const deadline = began + PAGE_TIMEOUT_MS;
  for (;;) {
    const { workspace_path } = (await service.call('GET', `/servers/${id}`)) as ServerRecord;
    const res = await fetch(`${service.url}/vscode/${port}/?folder=${encodeURIComponent(workspace_path ?? '')}`, { redirect: 'manual' }).catch(() => undefined);
    const body = await res?.text();
    if (res?.status === 200 && body) return { id, createdAt, startAnsweredMs, pageMs: performance.now() - began };
    if (performance.now() > deadline) throw new Error(`${side.runtime} "${name}": no editor page through the proxy within ${PAGE_TIMEOUT_MS / 1000} s (last answer ${res?.status})`);
    await sleep(50);
  }
}

/** `count` servers created at once, each timed from its POST /servers to its page; and the whole. */
async function createAll(side: Side, count: number, round: number, cluster: TestCluster) {
  const apiBefore = apiServer(cluster);
  const began = performance.now();
  const made = await Promise.all(Array.from({ length: count }, (_, i) => createOne(side, `${side.runtime} ${round}-${i}`)));
  const wallMs = performance.now() - began;
  return { made, ids: made.map((m) => m.id), pageMs: made.map((m) => m.pageMs), startAnsweredMs: made.map((m) => m.startAnsweredMs), wallMs, apiServerRestarted: apiServer(cluster) !== apiBefore };
}

/** DELETE /servers/{id} of each, until GET answers 404 (a Kubernetes server's objects are gone by then). */
async function deleteAll(side: Side, ids: string[]): Promise<void> {
  await Promise.all(ids.map(async (id) => {
    await side.service.call('DELETE', `/servers/${id}`);
    const deadline = Date.now() + RECOVER_TIMEOUT_MS;
    while ((await fetch(`${side.service.url}/servers/${id}`)).status !== 404) {
      if (Date.now() > deadline) throw new Error(`${side.runtime}: server ${id} still there ${RECOVER_TIMEOUT_MS / 1000} s after its DELETE`);
      await sleep(200);
    }
  }));
}

/**
 * Where a create's time went: the server's events (the controller's steps and, on Kubernetes, the
 * cluster's events of its objects), in ms from its POST /servers, for the server whose page came
 * at the median; the last line is the page answered through the proxy.
 */
async function timeline(side: Side, made: { id: string; createdAt: number; pageMs: number }[]): Promise<string[]> {
  const middle = [...made].sort((a, b) => a.pageMs - b.pageMs)[Math.floor(made.length / 2)];
  const { data } = await side.service.call('GET', `/servers/${middle.id}/events`);
  const lines = (data.events as { time: string; reason: string; message: string }[])
    .map((e) => ({ ms: Date.parse(e.time) - middle.createdAt, text: `${e.reason}${e.message ? `: ${e.message.slice(0, 100)}` : ''}` }))
    .sort((a, b) => a.ms - b.ms)
    .map((e) => `+${Math.round(e.ms)} ms ${e.text}`);
  return [...lines, `+${Math.round(middle.pageMs)} ms the editor's page answered 200 through the proxy`];
}

// --- 2. An editor's change → the server's status ---

interface Fault {
  label: string;
  side: Side;
  watch: RecordWatch;
  /**
   * What it takes to do it to the server's running editor (untimed): the deed, timed, and for a
   * Pod what the cluster says once it has seen it (the Pod absent: gone).
   */
  prepare(record: ServerRecord): Promise<{ deed: () => Promise<unknown>; podSaid?: (pod: V1Pod | undefined) => boolean }>;
  trials: number;
  change: number[];
  podReported: number[];
  afterPodReport: number[];
  deed: number[];
  recover: number[];
  discarded: number;
  failed: string[];
}

/**
 * One fault on one running server: ms from just before the deed to the first record on the watch
 * stream that is no longer that running editor, to the Pod's own report of it (the bench's Pod
 * watch), and to running again (the controller restarts it under restartPolicy Always, after its
 * backoff). False when the API server restarted meanwhile: the trial is discarded.
 */
async function trial(fault: Fault, id: string, cluster: TestCluster, pods: PodWatch): Promise<boolean> {
  const { watch } = fault;
  const { records } = watch;
  await records.until(id, (r) => r?.status === 'running', RECOVER_TIMEOUT_MS, `${fault.label}: server ${id} running before the trial`);
  const before = records.values.get(id)!;
  const { deed, podSaid } = await fault.prepare(before);
  const apiBefore = apiServer(cluster);
  const began = performance.now();
  const done = deed().then(() => performance.now());
  done.catch(() => {}); // awaited below, unless the status never changes
  const podSaidAt = podSaid ? pods.pods.until(`devbox-${before.manifest}-0`, podSaid, CHANGE_TIMEOUT_MS, 'the Pod\'s report').catch(() => undefined) : undefined;
  const changedAt = await records.until(id, (r) => r?.status !== 'running' || r.start_time !== before.start_time, CHANGE_TIMEOUT_MS, `${fault.label}: status change of ${id}`);
  const doneAt = await done;
  const reportedAt = await podSaidAt;
  const backAt = await records.until(id, (r) => r?.status === 'running' && r.start_time !== before.start_time, RECOVER_TIMEOUT_MS, `${fault.label}: ${id} running again`);
  if (apiBefore === 'down' || apiServer(cluster) !== apiBefore) {
    fault.discarded++;
    return false;
  }
  fault.change.push(changedAt - began);
  fault.deed.push(doneAt - began);
  fault.recover.push(backAt - began);
  if (reportedAt !== undefined) {
    fault.podReported.push(reportedAt - began);
    fault.afterPodReport.push(changedAt - reportedAt);
  }
  return true;
}

const editorOf = (pod: V1Pod | undefined) => pod?.status?.containerStatuses?.find((c) => c.name === 'editor');

/** The server's Pod and its running editor container, as its status names it. */
async function editorContainer(client: KubeClient, record: ServerRecord): Promise<{ uid: string; containerId: string }> {
  const pod = await client.read<V1Pod>('v1', 'Pod', `devbox-${record.manifest}-0`);
  const container = editorOf(pod);
  if (!pod || !container?.containerID || !container.state?.running) throw new Error(`no running editor container in the Pod of ${record.manifest}`);
  return { uid: pod.metadata!.uid!, containerId: container.containerID };
}

/** The kubelet has reported the container ended (or the Pod is another, or gone). */
const containerEnded = (uid: string, containerId: string) => (pod: V1Pod | undefined) => {
  const container = editorOf(pod);
  return pod?.metadata?.uid !== uid || !container || container.containerID !== containerId || container.state?.running === undefined;
};

export function spread(values: number[]) {
  if (values.length === 0) return undefined;
  return { p50_ms: round(median(values), 0), p95_ms: round(percentile(values, 95), 0), max_ms: round(Math.max(...values), 0) };
}

/**
 * `quick`: 1 round of creates and 6 / 6 / 3 faults instead of 2 rounds and 20 / 20 / 10. The
 * process side runs `processBin` (the real code-server of the cache, as the service does); the
 * Pods run the same code-server mounted from the host (test/helpers/kube-runtime.ts), or both
 * the stub editor when the cache has none.
 */
export async function benchKubernetes(processBin: string, quick: boolean, offset: number, servers = 10) {
  const cluster = await testCluster();
  if (!cluster) return { skipped: `no Kubernetes test cluster answers (${RUN_DIR}): the kubernetes section is skipped; \`scripts/test-cluster.sh up\` (root) starts one (docs/kubernetes-test-cluster.md)` };
  const podEditor = realEditor();
  const editor = podEditor ? 'code-server' : 'stub editor';
  const namespace = await testNamespace(cluster, 'devbox-bench');
  const sides: Side[] = [];
  const watches: { close(): void }[] = [];
  try {
    const processes: Side = { runtime: 'process', service: await startBenchService(podEditor ? processBin : STUB_EDITOR, benchPorts(offset)) };
    sides.push(processes);
    const pods: Side = {
      runtime: 'kubernetes',
      // The editor binary plays no part there (GET /health is checked below to say so).
      service: await startBenchService(STUB_EDITOR, benchPorts(offset + 1), {
        config: { runtime: { kind: 'kubernetes', kubernetes: runtimeOptions(namespace.name, podEditor ?? stubEditor(), cluster) } },
      }),
    };
    sides.push(pods);
    const apiPort = Number(new URL(cluster.server).port);
    const health = async (side: Side) => (await side.service.call('GET', '/health')) as { editor: string; memory_mb: { heap_used: number } };
    if (!(await health(pods)).editor.endsWith('(Kubernetes)')) throw new Error('the second service does not run its editors on Kubernetes');
    const memory = async (side: Side) => ({
      rss_mb: round(side.service.rssMb(), 1),
      uss_mb: round(sharedMemoryMb(side.service.pid).uss, 1),
      heap_used_mb: (await health(side)).memory_mb.heap_used,
      api_server_connections: connectionsTo(side.service.pid, apiPort),
    });
    const atRest = { process: await memory(processes), kubernetes: await memory(pods), bare_node_rss_mb: round(await bareNodeRssMb(), 1) };

    // 1. Rounds of `servers` creates on each side, the order alternating; each round's servers go
    // before the next (the last round's stay, for what follows). The second side of a round runs
    // beside the first side's idle editors, the first side alternating.
    const rounds = quick ? 1 : 2;
    const created: Record<RuntimeKind, Awaited<ReturnType<typeof createAll>>[]> = { process: [], kubernetes: [] };
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 === 0 ? [processes, pods] : [pods, processes]) created[side.runtime].push(await createAll(side, servers, r, cluster));
      if (r < rounds - 1) for (const side of sides) await deleteAll(side, created[side.runtime][r].ids);
    }
    const timelines = { process: await timeline(processes, created.process.at(-1)!.made), kubernetes: await timeline(pods, created.kubernetes.at(-1)!.made) };
    const createFigures = (runtime: RuntimeKind) => {
      const all = created[runtime];
      return {
        wall_ms: all.map((c) => round(c.wallMs, 0)),
        per_server: spread(all.flatMap((c) => c.pageMs)),
        start_answered: spread(all.flatMap((c) => c.startAnsweredMs)),
        per_server_ms: all.map((c) => c.pageMs.map((ms) => round(ms, 0))),
        median_server_timeline: timelines[runtime],
        ...(all.some((c) => c.apiServerRestarted) && { api_server_restarted_during: all.map((c) => c.apiServerRestarted) }),
      };
    };

    // 3. Memory with `servers` editors running on each, once the stats sampler has been round.
    await sleep(5000);
    const running = { process: await memory(processes), kubernetes: await memory(pods) };

    // 2. Faults, one at a time, each on the next server in turn, waiting for it to run again.
    const client = new KubeClient(namespace.name, cluster.kubeconfig);
    const processWatch = await RecordWatch.open(processes.service.url);
    const kubernetesWatch = await RecordWatch.open(pods.service.url);
    const podWatch = await PodWatch.open(cluster.kubeconfig, namespace.name);
    watches.push(processWatch, kubernetesWatch, podWatch);
    const fault = (label: string, side: Side, watch: RecordWatch, trials: number, prepare: Fault['prepare']): Fault =>
      ({ label, side, watch, prepare, trials, change: [], podReported: [], afterPodReport: [], deed: [], recover: [], discarded: 0, failed: [] });
    const containerKilled = fault('Kubernetes: the editor\'s container SIGKILLed through containerd', pods, kubernetesWatch, quick ? 6 : 20, async (record) => {
      const { uid, containerId } = await editorContainer(client, record);
      return { deed: () => killContainer(cluster, containerId), podSaid: containerEnded(uid, containerId) };
    });
    // The editor leads its own process group (the runtime starts it detached): all of it goes, as in a crash.
    const processKilled = fault('process: the editor\'s process group SIGKILLed', processes, processWatch, quick ? 6 : 20, async (record) =>
      ({ deed: async () => process.kill(-record.pid!, 'SIGKILL') }));
    const podDeleted = fault('Kubernetes: the editor\'s Pod deleted (its default grace)', pods, kubernetesWatch, quick ? 3 : 10, async (record) => {
      const { uid } = await editorContainer(client, record);
      return {
        deed: () => client.delete('v1', 'Pod', `devbox-${record.manifest}-0`),
        podSaid: (pod) => pod?.metadata?.uid !== uid || pod.metadata.deletionTimestamp !== undefined,
      };
    });
    const ids = (side: Side) => created[side.runtime].at(-1)!.ids;
    // Kills on both runtimes in alternation, so load and drift hit both; a discarded or failed trial is done again (a few at most).
    for (const group of [[containerKilled, processKilled], [podDeleted]]) {
      const done = new Map<Fault, number>(group.map((f) => [f, 0]));
      for (let turn = 0; turn < group[0].trials + 5 && group.some((f) => done.get(f)! < f.trials); turn++) {
        for (const f of group) {
          const n = done.get(f)!;
          if (n >= f.trials) continue;
          const ok = await trial(f, ids(f.side)[n % servers], cluster, podWatch).catch((error: Error) => void f.failed.push(error.message));
          if (ok) done.set(f, n + 1);
        }
      }
    }
    const faultFigures = (f: Fault) => ({
      fault: f.label,
      trials: f.change.length,
      change: spread(f.change),
      change_ms: f.change.map((ms) => round(ms, 0)),
      // The cluster's own word (the bench's watch of the Pod), and what the service took after it.
      pod_reported: spread(f.podReported),
      service_after_the_pod_report: spread(f.afterPodReport),
      // How long the deed itself took to return (the ctr command, the DELETE, the kill call).
      deed_returned_ms_median: round(median(f.deed), 0),
      running_again: spread(f.recover),
      ...(f.discarded > 0 && { discarded_api_server_restarted: f.discarded }),
      ...(f.failed.length > 0 && { failed: f.failed }),
    });
    const after = { process: await memory(processes), kubernetes: await memory(pods) };

    const wall = (runtime: RuntimeKind) => created[runtime].reduce((sum, c) => sum + c.wallMs, 0);
    return {
      editor,
      servers,
      rounds,
      namespace: namespace.name,
      create_to_page: {
        process: createFigures('process'),
        kubernetes: createFigures('kubernetes'),
        // Over the rounds together (each round's own ratio beside it).
        wall_ratio_kubernetes_to_process: round(wall('kubernetes') / wall('process'), 2),
        wall_ratio_each_round: created.kubernetes.map((k, i) => round(k.wallMs / created.process[i].wallMs, 2)),
        per_server_median_ratio_kubernetes_to_process: round(median(created.kubernetes.flatMap((c) => c.pageMs)) / median(created.process.flatMap((c) => c.pageMs)), 2),
      },
      status_change: {
        container_killed: faultFigures(containerKilled),
        pod_deleted: faultFigures(podDeleted),
        process_killed_floor: faultFigures(processKilled),
        target_p95_ms: 1000,
      },
      service_memory: {
        at_rest_no_servers: atRest,
        running: { servers, ...running, rss_ratio_kubernetes_to_process: round(running.kubernetes.rss_mb / running.process.rss_mb, 2) },
        after_the_faults: after,
      },
    };
  } finally {
    for (const watch of watches) watch.close();
    for (const side of sides) await side.service.close();
    await namespace.remove();
    const deadline = Date.now() + NAMESPACE_GONE_MS;
    while (Date.now() < deadline && (await kubectl(cluster, 'get', 'namespace', namespace.name, '--ignore-not-found', '-o', 'name').catch(() => 'unknown')).trim()) await sleep(2000);
    if (Date.now() >= deadline) console.warn(`kubernetes bench: namespace ${namespace.name} still there ${NAMESPACE_GONE_MS / 1000} s after its delete`);
  }
}
