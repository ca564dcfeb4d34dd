// An in-memory Kubernetes API behind the Kubernetes runtime's seam (ClusterApi), for its unit
// tests: a store of objects with uids and resourceVersions, list-then-watch over it (every change
// kept, so a watch resumes from any version), a StatefulSet controller that makes and deletes its
// one Pod, and what a scheduler and a kubelet would say of a Pod, scripted by the test: not
// placed, running and ready, its container ended with an exit code, started again. Each container
// run has its own log, read as the log API gives it (current or previous, followed or not).
// Every call is recorded, so a test can say what was (never) asked.
import { createHash, randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { ClusterApi, ClusterObject, ExecResult, KubeletSummary, LogOptions } from '../../src/runtime/kubernetes/cluster-api.ts';
import type { ListResult, ListWatchTransport, WatchEvent } from '../../src/runtime/kubernetes/list-watch.ts';
import type { KubeObject } from '../../src/runtime/kubernetes/objects.ts';
import type { KubernetesRuntimeOptions } from '../../src/runtime/kubernetes/options.ts';
import { KubernetesWorkload } from '../../src/runtime/kubernetes/runtime.ts';

/** An object as stored: plain JSON. */
type Stored = Record<string, any> & {
  kind: string;
  metadata: Record<string, any> & { name: string; uid: string; resourceVersion: string; labels?: Record<string, string>; deletionTimestamp?: string };
};

export interface Call {
  verb: 'apply' | 'read' | 'delete' | 'scale' | 'list' | 'watch' | 'exec' | 'log' | 'summary';
  kind?: string;
  name?: string;
}

/** One run of a Pod's container: its id and what it printed (lines after their times). */
interface Run {
  id: string;
  lines: string[];
  ended: boolean;
  listeners: Set<(cut?: boolean) => void>;
}

interface Watcher {
  kind: string;
  selector: Record<string, string>;
  onEvent: (event: WatchEvent<ClusterObject>) => void;
  end: () => void;
}

const EDITOR = 'editor';
const PREPARE = 'prepare';

/** `a=b,c=d` as pairs; empty: everything. */
function parseSelector(selector: string): Record<string, string> {
  return Object.fromEntries(selector.split(',').filter(Boolean).map((pair) => pair.split('=') as [string, string]));
}

function matches(object: Stored, selector: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => object.metadata.labels?.[key] === value);
}

/** An error as the client library throws it for a status code. */
function apiError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code, body: JSON.stringify({ message }) });
}

export class FakeCluster implements ClusterApi {
  readonly namespace: string;
  /** Every call made of it, in order. */
  readonly calls: Call[] = [];
  /** What an exec answers (by default: success, no output). */
  execHandler: (pod: string, container: string, command: string[], stdin?: Readable, stdout?: Writable, stderr?: Writable) => ExecResult | Promise<ExecResult> = () => ({ code: 0, stdout: Buffer.alloc(0), stderr: '' });
  /** Each node's kubelet summary. */
  readonly summaries = new Map<string, KubeletSummary>();
  /** When true, a deleted Pod stays, being deleted, until finishDeletion(); else it goes at once. */
  holdDeletions = false;
  #version = 0;
  #lastStamp = 0n;
  #nextIp = 10;
  readonly #objects = new Map<string, Stored>();
  readonly #history: Array<{ version: number; kind: string; event: WatchEvent<ClusterObject> }> = [];
  readonly #watchers = new Set<Watcher>();
  /** Container runs by Pod uid, oldest first. */
  readonly #runs = new Map<string, Run[]>();

  constructor(namespace = 'team') {
    this.namespace = namespace;
  }

  // --- ClusterApi ---

  async apply<T extends ClusterObject>(object: KubeObject): Promise<T> {
    const given = structuredClone(object) as unknown as Stored;
    this.calls.push({ verb: 'apply', kind: given.kind, name: given.metadata.name });
    const before = this.#objects.get(`${given.kind}/${given.metadata.name}`);
    if (before?.metadata.deletionTimestamp) throw apiError(409, `object is being deleted: ${given.kind} ${given.metadata.name} already exists`);
    const changed = JSON.stringify(given.spec) !== JSON.stringify(before?.spec);
    const stored: Stored = {
      ...given,
      metadata: {
        ...given.metadata,
        namespace: this.namespace,
        uid: before?.metadata.uid ?? randomUUID(),
        creationTimestamp: before?.metadata.creationTimestamp ?? new Date().toISOString(),
        generation: (before?.metadata.generation ?? 0) + (changed || !before ? 1 : 0),
        resourceVersion: '',
      },
      ...(before?.status ? { status: before.status } : given.kind === 'Pod' ? { status: { phase: 'Pending' } } : {}),
    };
    this.#store(stored, before ? 'MODIFIED' : 'ADDED');
    if (stored.kind === 'StatefulSet') this.#syncStatefulSet(stored.metadata.name);
    return structuredClone(this.#objects.get(`${stored.kind}/${stored.metadata.name}`)) as unknown as T;
  }

  async read<T extends ClusterObject>(_apiVersion: string, kind: string, name: string): Promise<T | undefined> {
    this.calls.push({ verb: 'read', kind, name });
    const found = this.#objects.get(`${kind}/${name}`);
    return found && (structuredClone(found) as unknown as T);
  }

  async delete(_apiVersion: string, kind: string, name: string, options: { uid?: string } = {}): Promise<boolean> {
    this.calls.push({ verb: 'delete', kind, name });
    const found = this.#objects.get(`${kind}/${name}`);
    if (!found || (options.uid !== undefined && found.metadata.uid !== options.uid)) return false;
    if (kind === 'Pod' && this.holdDeletions) {
      if (!found.metadata.deletionTimestamp) this.#update(found, (pod) => (pod.metadata.deletionTimestamp = new Date().toISOString()));
    } else {
      this.#remove(found);
    }
    return true;
  }

  async scale(name: string, replicas: number): Promise<void> {
    this.calls.push({ verb: 'scale', kind: 'StatefulSet', name });
    const found = this.#objects.get(`StatefulSet/${name}`);
    if (!found) throw apiError(404, `statefulsets.apps "${name}" not found`);
    this.#update(found, (set) => {
      set.spec.replicas = replicas;
      set.metadata.generation += 1;
    });
    this.#syncStatefulSet(name);
  }

  async list<T extends ClusterObject>(_apiVersion: string, kind: string, labelSelector: string): Promise<ListResult<T>> {
    this.calls.push({ verb: 'list', kind });
    const selector = parseSelector(labelSelector);
    const items = [...this.#objects.values()].filter((o) => o.kind === kind && matches(o, selector));
    return { items: structuredClone(items) as unknown as T[], resourceVersion: String(this.#version) };
  }

  transport<T extends ClusterObject>(apiVersion: string, kind: string, _path: string, labelSelector: string): ListWatchTransport<T> {
    const selector = parseSelector(labelSelector);
    return {
      list: () => this.list<T>(apiVersion, kind, labelSelector),
      watch: (resourceVersion, onEvent, signal) => new Promise<void>((resolve) => {
        this.calls.push({ verb: 'watch', kind });
        const from = Number(resourceVersion);
        for (const past of this.#history) {
          if (past.kind === kind && past.version > from && matches(past.event.object as Stored, selector)) onEvent(structuredClone(past.event) as WatchEvent<T>);
        }
        const watcher: Watcher = { kind, selector, onEvent: onEvent as Watcher['onEvent'], end: () => done() };
        const done = () => {
          this.#watchers.delete(watcher);
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.#watchers.add(watcher);
        signal.addEventListener('abort', done, { once: true });
      }),
    };
  }

  async exec(pod: string, container: string, command: string[], options: { stdin?: Readable; stdout?: Writable; stderr?: Writable } = {}): Promise<ExecResult> {
    this.calls.push({ verb: 'exec', kind: 'Pod', name: pod });
    return this.execHandler(pod, container, command, options.stdin, options.stdout, options.stderr);
  }

  async containerLog(pod: string, container: string, options: LogOptions, onText: (text: string) => void, signal: AbortSignal): Promise<void> {
    this.calls.push({ verb: 'log', kind: 'Pod', name: pod });
    const uid = this.#objects.get(`Pod/${pod}`)?.metadata.uid;
    const runs = container === EDITOR && uid ? this.#runs.get(uid) ?? [] : [];
    const run = runs.at(options.previous ? -2 : -1);
    if (!run || signal.aborted) return;
    const lines = options.tailLines === undefined ? run.lines : run.lines.slice(-options.tailLines);
    let told = run.lines.length;
    if (lines.length > 0) onText(`${lines.join('\n')}\n`);
    if (!options.follow || run.ended) return;
    await new Promise<void>((resolve) => {
      const listener = (cut = false) => {
        if (run.lines.length > told) onText(`${run.lines.slice(told).join('\n')}\n`);
        told = run.lines.length;
        if (run.ended || signal.aborted || cut) finish();
      };
      const finish = () => {
        run.listeners.delete(listener);
        signal.removeEventListener('abort', finish);
        resolve();
      };
      run.listeners.add(listener);
      signal.addEventListener('abort', finish, { once: true });
    });
  }

  async nodeSummary(node: string): Promise<KubeletSummary> {
    this.calls.push({ verb: 'summary', name: node });
    const summary = this.summaries.get(node);
    if (!summary) throw apiError(503, `no summary of node ${node}`);
    return structuredClone(summary);
  }

  // --- What the test reads ---

  /** An object as stored now, or undefined. */
  object<T = Stored>(kind: string, name: string): T | undefined {
    const found = this.#objects.get(`${kind}/${name}`);
    return found && (structuredClone(found) as unknown as T);
  }

  pod(name: string): V1Pod | undefined {
    return this.object<V1Pod>('Pod', name);
  }

  /** The names of the objects of a kind. */
  names(kind: string): string[] {
    return [...this.#objects.values()].filter((o) => o.kind === kind).map((o) => o.metadata.name);
  }

  /** The calls made with that verb (and kind), as `kind/name`. */
  callsOf(verb: Call['verb'], kind?: string): string[] {
    return this.calls.filter((c) => c.verb === verb && (kind === undefined || c.kind === kind)).map((c) => `${c.kind}/${c.name}`);
  }

  /** Ends every followed log stream while its container runs, as a broken connection would. */
  cutLogStreams(): void {
    for (const runs of this.#runs.values()) for (const run of runs) for (const listener of [...run.listeners]) listener(true);
  }

  /** Ends every open watch, as the API server ends each after its timeout. */
  endWatches(): void {
    for (const watcher of [...this.#watchers]) watcher.end();
  }

  // --- What the scheduler, the kubelet and others do, scripted ---

  /** Puts a Pod there as someone else made it (a stranger's Pod, or one left by an earlier run). */
  putPod(pod: V1Pod): V1Pod {
    const stored = structuredClone(pod) as unknown as Stored;
    stored.kind = 'Pod';
    stored.apiVersion = 'v1';
    stored.metadata = { ...stored.metadata, namespace: this.namespace, uid: stored.metadata.uid ?? randomUUID(), resourceVersion: '' };
    stored.status ??= { phase: 'Pending' };
    this.#store(stored, this.#objects.has(`Pod/${stored.metadata.name}`) ? 'MODIFIED' : 'ADDED');
    return this.pod(stored.metadata.name)!;
  }

  /** The scheduler cannot place the Pod. */
  unschedulable(pod: string, message = '0/1 nodes are available: 1 Insufficient memory.'): void {
    this.updatePod(pod, (p) => {
      p.status!.phase = 'Pending';
      p.status!.conditions = [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }];
    });
  }

  /** Placed on a node, its sandbox up (an address), its volume being prepared. */
  schedule(pod: string, node = 'node-1'): void {
    this.updatePod(pod, (p) => {
      p.spec!.nodeName = node;
      p.status = {
        ...p.status,
        phase: 'Pending',
        podIP: p.status?.podIP ?? `10.0.0.${this.#nextIp++}`,
        conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'False', reason: 'ContainersNotReady' }],
        initContainerStatuses: [{ name: PREPARE, image: 'i', imageID: '', ready: false, restartCount: 0, state: { running: {} } }],
        containerStatuses: [{ name: EDITOR, image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }],
      };
    });
  }

  /** The editor's container waits for a reason that needs someone (ImagePullBackOff). */
  waiting(pod: string, reason: string, message: string): void {
    this.updatePod(pod, (p) => (this.#editor(p).state = { waiting: { reason, message } }));
  }

  /** The volume prepared (its report: what the workspace and extensions hold), the editor's container runs; ready once it answers. */
  runEditor(pod: string, options: { ready?: boolean; report?: string } = {}): void {
    if (!this.#objects.get(`Pod/${pod}`)?.status?.podIP) this.schedule(pod);
    this.updatePod(pod, (p) => {
      const ready = options.ready ?? true;
      const run = this.#newRun(p);
      p.status!.phase = 'Running';
      p.status!.conditions = [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: ready ? 'True' : 'False', ...(ready ? {} : { reason: 'ContainersNotReady' }) }];
      p.status!.initContainerStatuses = [{
        name: PREPARE, image: 'i', imageID: '', ready: false, restartCount: 0,
        state: { terminated: { exitCode: 0, message: options.report ?? '#workspace empty\n#folders\n#end\n' } },
      }];
      p.status!.containerStatuses = [{ name: EDITOR, image: 'i', imageID: '', ready, restartCount: 0, containerID: run.id, state: { running: { startedAt: new Date() } } }];
    });
  }

  /** The editor's current container run prints these lines (to the Pod's log). */
  print(pod: string, ...lines: string[]): void {
    const run = this.#runs.get(this.#objects.get(`Pod/${pod}`)!.metadata.uid)!.at(-1)!;
    for (const line of lines) run.lines.push(`${this.#stamp()} ${line}`);
    for (const listener of [...run.listeners]) listener();
  }

  /** The editor's container ends: with a code (128 + n for signal n), the kubelet's reason. */
  endEditor(pod: string, exitCode: number, reason = exitCode === 0 ? 'Completed' : 'Error'): void {
    this.updatePod(pod, (p) => {
      const status = this.#editor(p);
      status.ready = false;
      status.state = { terminated: { exitCode, reason, containerID: status.containerID, finishedAt: new Date() } };
      p.status!.conditions = [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'False', reason: 'ContainersNotReady' }];
    });
    const run = this.#runs.get(this.#objects.get(`Pod/${pod}`)!.metadata.uid)!.at(-1)!;
    run.ended = true;
    for (const listener of [...run.listeners]) listener();
  }

  /** The kubelet starts the ended container again (a new run: the last one becomes `lastState`). */
  restartEditor(pod: string): void {
    this.updatePod(pod, (p) => {
      const status = this.#editor(p);
      const run = this.#newRun(p);
      status.lastState = { terminated: status.state!.terminated! };
      status.restartCount += 1;
      status.containerID = run.id;
      status.state = { running: { startedAt: new Date() } };
    });
  }

  /** The kubelet waits before it starts the container again. */
  backOff(pod: string): void {
    this.updatePod(pod, (p) => {
      const status = this.#editor(p);
      status.lastState = { terminated: status.state!.terminated! };
      status.state = { waiting: { reason: 'CrashLoopBackOff', message: `back-off 10s restarting failed container=editor pod=${pod}` } };
    });
  }

  /** Changes a Pod's object as someone (its kubelet, the node controller) would. */
  updatePod(name: string, change: (pod: V1Pod) => void): void {
    const found = this.#objects.get(`Pod/${name}`);
    if (!found) throw new Error(`no Pod ${name}`);
    this.#update(found, change as (object: Stored) => void);
  }

  /** A Pod deleted while deletions are held goes now. */
  finishDeletion(name: string): void {
    const found = this.#objects.get(`Pod/${name}`);
    if (found) this.#remove(found);
  }

  /** Something Kubernetes says about an object (an Event in the namespace). */
  event(object: { kind: string; name: string }, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal'): void {
    const now = new Date().toISOString();
    this.#store({
      apiVersion: 'v1', kind: 'Event', type, reason, message, count: 1, lastTimestamp: now, involvedObject: object,
      metadata: { name: `${object.name}.${randomUUID().slice(0, 8)}`, uid: randomUUID(), resourceVersion: '', creationTimestamp: now },
    }, 'ADDED');
  }

  // --- Inside ---

  #editor(pod: V1Pod) {
    const status = pod.status?.containerStatuses?.find((c) => c.name === EDITOR);
    if (!status) throw new Error(`the Pod ${pod.metadata?.name} has no editor container status yet`);
    return status;
  }

  #newRun(pod: V1Pod): Run {
    const uid = pod.metadata!.uid!;
    const run: Run = { id: `containerd://${randomUUID().replaceAll('-', '')}`, lines: [], ended: false, listeners: new Set() };
    this.#runs.set(uid, [...(this.#runs.get(uid) ?? []), run]);
    return run;
  }

  /** A log line's time as the kubelet writes it (RFC 3339 to the nanosecond), later than the last. */
  #stamp(): string {
    let ns = BigInt(Date.now()) * 1_000_000n;
    if (ns <= this.#lastStamp) ns = this.#lastStamp + 1n;
    this.#lastStamp = ns;
    const seconds = new Date(Number(ns / 1_000_000n)).toISOString().slice(0, 19);
    return `${seconds}.${String(ns % 1_000_000_000n).padStart(9, '0')}Z`;
  }

  #store(object: Stored, type: 'ADDED' | 'MODIFIED'): void {
    object.metadata.resourceVersion = String(++this.#version);
    this.#objects.set(`${object.kind}/${object.metadata.name}`, object);
    this.#tell(object, type);
  }

  #update(object: Stored, change: (object: Stored) => void): void {
    const next = structuredClone(object);
    change(next);
    this.#store(next, 'MODIFIED');
  }

  #remove(object: Stored): void {
    this.#objects.delete(`${object.kind}/${object.metadata.name}`);
    const gone = structuredClone(object);
    gone.metadata.resourceVersion = String(++this.#version);
    this.#tell(gone, 'DELETED');
    const owner = object.metadata.ownerReferences?.find((o: { kind: string }) => o.kind === 'StatefulSet');
    if (owner) this.#syncStatefulSet(owner.name);
  }

  #tell(object: Stored, type: 'ADDED' | 'MODIFIED' | 'DELETED'): void {
    const event = { type, object: structuredClone(object) } as WatchEvent<ClusterObject>;
    this.#history.push({ version: this.#version, kind: object.kind, event });
    for (const watcher of [...this.#watchers]) {
      if (watcher.kind === object.kind && matches(object, watcher.selector)) watcher.onEvent(structuredClone(event));
    }
  }

  /** The StatefulSet controller: its status, and its one Pod made from its template or deleted. */
  #syncStatefulSet(name: string): void {
    const set = this.#objects.get(`StatefulSet/${name}`);
    if (!set) return;
    const revision = `${name}-${createHash('sha256').update(JSON.stringify(set.spec.template)).digest('hex').slice(0, 10)}`;
    if (set.status?.observedGeneration !== set.metadata.generation || set.status?.updateRevision !== revision) {
      this.#update(set, (s) => (s.status = { observedGeneration: s.metadata.generation, updateRevision: revision, replicas: s.spec.replicas }));
    }
    const podName = `${name}-0`;
    const pod = this.#objects.get(`Pod/${podName}`);
    if (set.spec.replicas > 0 && !pod) {
      const template = structuredClone(set.spec.template);
      this.#store({
        apiVersion: 'v1', kind: 'Pod',
        metadata: {
          name: podName, namespace: this.namespace, uid: randomUUID(), resourceVersion: '',
          labels: { ...template.metadata?.labels, 'controller-revision-hash': revision },
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name, uid: set.metadata.uid }],
        },
        spec: template.spec,
        status: { phase: 'Pending' },
      }, 'ADDED');
    } else if (set.spec.replicas === 0 && pod && !pod.metadata.deletionTimestamp) {
      if (this.holdDeletions) this.#update(pod, (p) => (p.metadata.deletionTimestamp = new Date().toISOString()));
      else this.#remove(pod);
    }
  }
}

/** The runtime's options for a namespace of the fake cluster: the defaults a service would give, its log kept. */
export function fakeRuntimeOptions(namespace = 'team', log: string[] = []): KubernetesRuntimeOptions {
  return {
    namespace, image: 'example/code-server:1', imagePullPolicy: 'IfNotPresent', command: ['code-server'],
    storage: { size: '5Gi' }, resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
    runAsUser: 1000, extraMounts: [], env: {}, namePrefix: 'devbox-',
    log: (level, message) => log.push(`${level}: ${message}`),
  };
}

/** A Kubernetes runtime over the fake cluster, once it has its first view. */
export async function runtimeOn(cluster: FakeCluster, log: string[] = []): Promise<KubernetesWorkload<FakeCluster>> {
  const runtime = new KubernetesWorkload(fakeRuntimeOptions(cluster.namespace, log), cluster);
  await runtime.synced();
  return runtime;
}
