// The Kubernetes runtime: each server's editor is the one Pod of a StatefulSet, its storage a
// PersistentVolumeClaim (objects.ts), reached through exec (storage.ts). The runtime watches its
// Pods with the project's own list-then-watch loop and answers state(), adopt() and list() from
// that view, never with a question to the API server on the way.
//
// An editor is one Pod (namespace, name, uid). When its container ends, on its own or killed,
// that editor has exited: the runtime scales the StatefulSet to zero and deletes the Pod, so the
// controller's restartPolicy decides what happens next, as with local processes (the kubelet's
// own restart of the container is not relied upon).
import { EventEmitter } from 'node:events';
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { checkHealth, waitHealthy, type HealthResult } from '../health.ts';
import {
  EditorNotPlaced, type EditorEndpoint, type EditorOutput, type EditorRuntime, type EditorState, type EditorUsage,
  type ExitInfo, type ExtensionOutcome, type InstalledExtensions, type PopulateOutcome, type PopulateSource,
  type RunningEditor, type RuntimeEvent, type RuntimeRef, type StartedEditor, type StartSpec,
} from '../interface.ts';
import { KubeClient, messageOf } from './client.ts';
import { watchEvents } from './cluster-events.ts';
import { ListWatch } from './list-watch.ts';
import { Names, ROLE_LABEL, selector } from './names.ts';
import { ServerObjects } from './objects.ts';
import type { KubernetesRuntimeOptions } from './options.ts';
import { containerPort, editorEnded, editorStatus, isOver, isReady, isRunningContainer, podEndpoint, podIp, podProblem, restartEnded, restarted } from './pod-state.ts';
import { podLogs } from './pod-logs.ts';
import { KubernetesStorage } from './storage.ts';

/** The label the StatefulSet controller gives each Pod: the template revision it was made from. */
const REVISION_LABEL = 'controller-revision-hash';

/** How long start() waits for the Pod to exist and get an address. */
const PLACE_TIMEOUT_MS = 60_000;

/** What the runtime remembers of an editor Pod that ended: its exit, once its Pod is gone. */
interface Ended {
  exit: ExitInfo | undefined;
  /** True once the Pod object is gone. */
  gone: boolean;
  /** Stopped by this runtime (not a crash). */
  stopped: boolean;
  /** The container that ended (the kubelet may have started another in the Pod since). */
  containerId?: string;
}

export class KubernetesRuntime implements EditorRuntime {
  readonly kind = 'kubernetes';
  readonly #options: KubernetesRuntimeOptions;
  readonly #client: KubeClient;
  readonly #names: Names;
  readonly #objects: ServerObjects;
  readonly #storage: KubernetesStorage;
  /** Every Pod of this service in the namespace (editors and storage helpers), by name. */
  readonly #pods = new Map<string, V1Pod>();
  readonly #ended = new Map<string, Ended>();
  /** What was last said about each editor Pod, to report changes only. */
  readonly #seen = new Map<string, string>();
  readonly #changes = new EventEmitter();
  readonly #listeners: Array<(name: string) => void> = [];
  readonly #eventListeners: Array<(name: string, event: RuntimeEvent) => void> = [];
  readonly #podWatch: ListWatch<V1Pod>;
  readonly #closeEvents: () => Promise<void>;
  #disposed = false;

  constructor(options: KubernetesRuntimeOptions) {
    this.#options = options;
    this.#client = new KubeClient(options.namespace, options.kubeconfig);
    this.#names = new Names(options.namePrefix, options.namespace);
    this.#objects = new ServerObjects(this.#names, options);
    this.#storage = new KubernetesStorage({
      client: this.#client, names: this.#names, objects: this.#objects, editorCommand: options.command,
      runningEditor: (name) => this.#servingPod(name),
      vsixDir: process.env.DEVBOX_VSIX_DIR || undefined,
    });
    this.#changes.setMaxListeners(0);
    const path = `/api/v1/namespaces/${options.namespace}/pods`;
    this.#podWatch = new ListWatch<V1Pod>(this.#client.transport<V1Pod>('v1', 'Pod', path, selector()), {
      replace: (items) => {
        const names = new Set(items.map((p) => p.metadata?.name));
        for (const [podName, pod] of this.#pods) if (!names.has(podName)) this.#removed(pod);
        for (const pod of items) this.#upsert(pod);
      },
      upsert: (pod) => this.#upsert(pod),
      remove: (pod) => this.#removed(pod),
      trouble: (error, delayMs) => this.#log('warn', `watching Pods in ${options.namespace}: ${error.message}; again in ${Math.round(delayMs)} ms`),
    }, { relistMs: 5 * 60_000, backoff: { initialMs: 250, maxMs: 10_000 } });
    this.#podWatch.start();
    this.#closeEvents = watchEvents(this.#client, this.#names, (name, event) => {
      for (const listener of this.#eventListeners) listener(name, event);
    }, (error) => this.#log('warn', `watching events in ${options.namespace}: ${error.message}`));
  }

  synced(): Promise<void> {
    return this.#podWatch.synced();
  }

  // --- The watch cache ---

  #upsert(pod: V1Pod): void {
    const podName = pod.metadata?.name;
    if (!podName) return;
    this.#pods.set(podName, pod);
    const name = this.#names.serverOf(pod.metadata);
    if (!name || pod.metadata?.labels?.[ROLE_LABEL] !== 'editor') {
      this.#changes.emit(name ?? '', pod);
      return;
    }
    const uid = pod.metadata!.uid!;
    const exit = editorEnded(pod);
    if (exit && !this.#ended.has(uid)) {
      this.#ended.set(uid, { exit: undefined, gone: false, stopped: false });
      void this.#endEditor(name, pod, exit);
    }
    const ended = this.#ended.get(uid);
    if (ended && !ended.gone && restartEnded(pod, ended.containerId)) ended.gone = true;
    // What state() answers from (not readiness: whether it serves is the health checks' to say).
    const said = JSON.stringify([isRunningContainer(pod), podIp(pod), podProblem(pod)?.reason, this.#ended.has(uid), isOver(pod), ended?.gone]);
    if (this.#seen.get(uid) !== said) {
      this.#seen.set(uid, said);
      this.#notify(name);
    }
    this.#changes.emit(name, pod);
  }

  #removed(pod: V1Pod): void {
    const podName = pod.metadata?.name;
    if (!podName || this.#pods.get(podName)?.metadata?.uid !== pod.metadata?.uid) return;
    this.#pods.delete(podName);
    const name = this.#names.serverOf(pod.metadata);
    const uid = pod.metadata?.uid ?? '';
    this.#seen.delete(uid);
    const ended = this.#ended.get(uid);
    if (ended) ended.gone = true;
    if (name && pod.metadata?.labels?.[ROLE_LABEL] === 'editor') this.#notify(name);
    this.#changes.emit(name ?? '', pod);
  }

  /** An editor's container ended: record how, stop its StatefulSet, and let its Pod go. */
  async #endEditor(name: string, pod: V1Pod, { containerId, ...exit }: ExitInfo & { containerId?: string }): Promise<void> {
    const ended = this.#ended.get(pod.metadata!.uid!)!;
    ended.exit = exit;
    ended.containerId = containerId;
    if (ended.stopped) return;
    this.#log('info', `the editor of ${name} (Pod ${pod.metadata?.name}) ended: ${exit.signal ?? `exit code ${exit.code}`}`);
    // The kubelet runs the container again, which ends at once (objects.ts: it runs once per Pod):
    // that second end is the kubelet's word that nothing of the editor runs. Only then (or after
    // a few seconds, should it not come) do the StatefulSet and the Pod go, which takes a while.
    const uid = pod.metadata!.uid!;
    const deadline = Date.now() + 3000;
    while (!this.#disposed && Date.now() < deadline) {
      const now = this.#pods.get(pod.metadata!.name!);
      if (now?.metadata?.uid !== uid || restarted(now, containerId)) break;
      await this.#nextChange(name, deadline - Date.now());
    }
    try {
      await this.#scale(name, 0);
      await this.#client.delete('v1', 'Pod', pod.metadata!.name!, { uid, graceSeconds: 1 });
    } catch (error) {
      this.#log('warn', `stopping the ended editor of ${name}: ${messageOf(error)}`);
    }
  }

  #notify(name: string): void {
    if (this.#disposed) return;
    for (const listener of this.#listeners) listener(name);
  }

  /** The server's current editor Pod (not ended, not being deleted). */
  #editorPod(name: string): V1Pod | undefined {
    const pod = this.#pods.get(this.#names.editorPod(name));
    if (!pod || this.#names.serverOf(pod.metadata) !== name || pod.metadata?.labels?.[ROLE_LABEL] !== 'editor') return undefined;
    return this.#ended.has(pod.metadata!.uid!) || isOver(pod) ? undefined : pod;
  }

  /** The server's editor Pod while its container runs (exec goes there instead of a helper). */
  #servingPod(name: string): V1Pod | undefined {
    const pod = this.#editorPod(name);
    return pod && editorStatus(pod)?.state?.running ? pod : undefined;
  }

  /** Resolves when the server's Pods change, or after `ms`, or when the signal aborts. */
  #nextChange(name: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#changes.off(name, done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#changes.on(name, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  // --- Storage ---

  prepare(name: string): Promise<string> { return this.#storage.prepare(name); }
  workspaceEmpty(name: string): Promise<boolean> { return this.#storage.workspaceEmpty(name); }
  populate(name: string, source: PopulateSource, signal: AbortSignal): Promise<PopulateOutcome> { return this.#storage.populate(name, source, signal); }
  readSettings(name: string): Promise<string | undefined> { return this.#storage.readSettings(name); }
  writeSettings(name: string, text: string): Promise<void> { return this.#storage.writeSettings(name, text); }
  readAppliedSettings(name: string): Promise<string | undefined> { return this.#storage.readAppliedSettings(name); }
  writeAppliedSettings(name: string, text: string): Promise<void> { return this.#storage.writeAppliedSettings(name, text); }
  installedExtensions(name: string): Promise<InstalledExtensions> { return this.#storage.installedExtensions(name); }
  installExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome> { return this.#storage.installExtension(name, id, signal); }
  uninstallExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome> { return this.#storage.uninstallExtension(name, id, signal); }
  remove(name: string): Promise<void> { return this.#storage.remove(name); }

  // --- The editor ---

  /** Route numbers are only numbers here: the editor serves on its own Pod's address. */
  async portIsFree(): Promise<boolean> {
    return true;
  }

  /** The port and resources of the last start, kept for a scale to zero (an apply states the whole object). */
  readonly #launched = new Map<string, { port: number; resources?: StartSpec['resources'] }>();

  async #scale(name: string, replicas: 0 | 1, launch?: { port: number; resources?: StartSpec['resources'] }): Promise<void> {
    const owner = await this.#storage.owner(name);
    if (launch) this.#launched.set(name, launch);
    const last = this.#launched.get(name) ?? this.#fromCluster(name);
    if (!last) {
      // Nothing known of it in this run and no Pod to read: scale the StatefulSet there is, if any.
      if ((await this.#client.read('apps/v1', 'StatefulSet', this.#names.object(name))) === undefined) return;
      await this.#client.scale(this.#names.object(name), replicas);
      return;
    }
    await this.#client.apply(this.#objects.statefulSet(name, owner, replicas, last.port, last.resources));
  }

  /** The port (and resources) the server's Pod runs with, when the cache has it. */
  #fromCluster(name: string): { port: number; resources?: StartSpec['resources'] } | undefined {
    const pod = this.#lastEditorPod(name);
    const container = pod?.spec?.containers?.find((c) => c.name === 'editor');
    const port = container?.ports?.[0]?.containerPort;
    return port ? { port, resources: container?.resources as StartSpec['resources'] } : undefined;
  }

  /**
   * The StatefulSet's Pod as an earlier start made it, when its editor never ran (not placed, its
   * image not pulled) and the template has changed since (other resources, another image): the
   * StatefulSet controller waits for that Pod to be Ready before it replaces anything
   * (kubernetes/kubernetes#67250), so the new start would wait behind it forever. It is deleted,
   * and the StatefulSet makes it again from the template just applied. A Pod whose editor ran is
   * never touched here.
   */
  async #replaceUnstarted(name: string): Promise<void> {
    const pod = this.#editorPod(name);
    if (!pod || pod.status?.phase !== 'Pending' || editorStatus(pod)?.state?.running || editorStatus(pod)?.state?.terminated) return;
    const revision = await this.#updateRevision(name);
    if (!revision || pod.metadata?.labels?.[REVISION_LABEL] === revision) return;
    this.#log('info', `the Pod ${pod.metadata?.name} of ${name} never ran and has an earlier template: it is made again from the new one`);
    await this.#client.delete('v1', 'Pod', pod.metadata!.name!, { uid: pod.metadata!.uid!, graceSeconds: 0 });
  }

  /** The StatefulSet's current template revision, once its controller has seen the last change (a bounded wait). */
  async #updateRevision(name: string): Promise<string | undefined> {
    const deadline = Date.now() + 5000;
    while (true) {
      const set = await this.#client.read<V1StatefulSet>('apps/v1', 'StatefulSet', this.#names.object(name));
      if (!set) return undefined;
      if ((set.status?.observedGeneration ?? 0) >= (set.metadata?.generation ?? 0)) return set.status?.updateRevision;
      if (Date.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async start(spec: StartSpec): Promise<StartedEditor> {
    const { name } = spec;
    const owner = await this.#storage.owner(name);
    await this.#storage.prepare(name);
    // One Pod on the volume at a time: the storage helper goes before the editor comes.
    await this.#storage.releaseHelper(name);
    await this.#client.apply(this.#objects.service(name, owner, spec.port));
    await this.#scale(name, 1, { port: spec.port, resources: spec.resources });
    await this.#replaceUnstarted(name);
    const deadline = Date.now() + PLACE_TIMEOUT_MS;
    while (true) {
      const pod = this.#editorPod(name);
      if (pod) {
        const endpoint = podEndpoint(pod);
        if (endpoint) return { ref: this.#names.refOf(pod), endpoint };
        const problem = podProblem(pod);
        if (problem?.reason === 'Unschedulable') throw new EditorNotPlaced(problem);
      }
      if (Date.now() > deadline) {
        const problem = pod && podProblem(pod);
        if (problem) throw new EditorNotPlaced(problem);
        throw new Error(`the editor's Pod ${this.#names.editorPod(name)} ${pod ? 'got no address' : 'was not created'} within ${PLACE_TIMEOUT_MS / 1000} s`);
      }
      await this.#nextChange(name, 1000);
    }
  }

  async stop(name: string, ref: RuntimeRef, graceMs: number): Promise<boolean> {
    const named = this.#names.podOf(name, ref);
    if (!named) return false;
    const pod = this.#pods.get(named.pod) ?? (await this.#client.read<V1Pod>('v1', 'Pod', named.pod));
    // A Pod of that name that is not this server's (a stranger's, or someone's copy) is never touched.
    if (pod && this.#names.serverOf(pod.metadata) !== name) return false;
    if (pod?.metadata?.uid === named.uid) {
      const ended = this.#ended.get(named.uid);
      if (ended) ended.stopped = true;
      else this.#ended.set(named.uid, { exit: undefined, gone: false, stopped: true });
    }
    await this.#scale(name, 0);
    if (pod?.metadata?.uid === named.uid) await this.#client.delete('v1', 'Pod', named.pod, { uid: named.uid, graceSeconds: Math.max(1, Math.ceil(graceMs / 1000)) });
    return true;
  }

  state(name: string, ref: RuntimeRef): EditorState {
    const named = this.#names.podOf(name, ref);
    if (!named) return { state: 'foreign' };
    const pod = this.#pods.get(named.pod);
    const ended = this.#ended.get(named.uid);
    if (pod?.metadata?.uid === named.uid) {
      if (this.#names.serverOf(pod.metadata) !== name) return { state: 'foreign' };
      if (ended?.gone) return { state: 'exited', exit: ended.exit ?? { code: null, signal: null } };
      if (ended || isOver(pod)) return { state: 'exited', exit: undefined };
      const problem = podProblem(pod);
      // Running while its container runs, as a process runs: whether it serves is the health checks' to say.
      return { state: isRunningContainer(pod) ? 'running' : 'starting', endpoint: podEndpoint(pod), ...(problem ? { problem } : {}) };
    }
    if (ended) return { state: 'exited', exit: ended.gone ? ended.exit ?? { code: null, signal: null } : undefined };
    return { state: 'gone' };
  }

  adopt(name: string, ref: RuntimeRef): { endpoint: EditorEndpoint | undefined } | undefined {
    const seen = this.state(name, ref);
    return seen.state === 'running' || seen.state === 'starting' ? { endpoint: seen.endpoint } : undefined;
  }

  async list(): Promise<RunningEditor[]> {
    await this.synced();
    const found: RunningEditor[] = [];
    for (const pod of this.#pods.values()) {
      const name = this.#names.serverOf(pod.metadata);
      // The editor listens on its route number in its Pod: the container's port is the server's port.
      if (name && this.#editorPod(name) === pod) found.push({ name, ref: this.#names.refOf(pod), port: podEndpoint(pod)?.port ?? containerPort(pod) });
    }
    return found;
  }

  health(endpoint: EditorEndpoint, timeoutMs?: number): Promise<HealthResult> {
    return checkHealth(endpoint, timeoutMs);
  }

  waitReady(endpoint: EditorEndpoint, deadline: number, cancelled: () => boolean): Promise<boolean> {
    return waitHealthy(endpoint, deadline, cancelled);
  }

  /** The cluster's scheduler decides where editors fit: no memory of ours to share out. */
  memory(): undefined {
    return undefined;
  }

  /** The last failure of each node's kubelet summary, while it lasts. */
  readonly #summaryTrouble = new Map<string, string>();

  /** CPU and memory from the kubelets' summaries (through the API server), by reference. */
  async usage(refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>> {
    const byUid = new Map<string, RuntimeRef>();
    const nodes = new Set<string>();
    for (const ref of refs) {
      const pod = typeof ref.pod === 'string' ? this.#pods.get(ref.pod) : undefined;
      if (!pod || pod.metadata?.uid !== ref.uid || this.#ended.has(ref.uid as string) || isOver(pod) || !pod.spec?.nodeName) continue;
      byUid.set(ref.uid as string, ref);
      nodes.add(pod.spec.nodeName);
    }
    const usage = new Map<RuntimeRef, EditorUsage>();
    for (const node of nodes) {
      const summary = await this.#client.nodeSummary(node).catch((error) => {
        // Said once while it lasts (it is asked for at every sample), and when it is over.
        const message = messageOf(error);
        if (this.#summaryTrouble.get(node) !== message) this.#log('warn', `the kubelet summary of ${node}: ${message}`);
        this.#summaryTrouble.set(node, message);
        return undefined;
      });
      if (summary && this.#summaryTrouble.delete(node)) this.#log('info', `the kubelet summary of ${node} answers again`);
      for (const pod of summary?.pods ?? []) {
        const ref = byUid.get(pod.podRef?.uid ?? '');
        const container = pod.containers?.find((c) => c.name === 'editor');
        if (!ref || !container?.memory?.workingSetBytes) continue;
        const memoryBytes = container.memory.workingSetBytes;
        const started = Date.parse(container.startTime ?? '');
        usage.set(ref, {
          cpuPercent: Math.round((container.cpu?.usageNanoCores ?? 0) / 1e5) / 100,
          memoryMb: Math.round(memoryBytes / 1048576),
          memoryBytes,
          uptime: Number.isFinite(started) ? Math.max(0, Math.round((Date.now() - started) / 1000)) : 0,
        });
      }
    }
    return usage;
  }

  logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
    return podLogs({
      client: this.#client,
      editorPod: (server) => this.#editorPod(server) ?? this.#lastEditorPod(server),
      nextChange: (server, signal) => this.#nextChange(server, 5000, signal),
    }, name, options);
  }

  /** The server's editor Pod even while it ends (its last lines are still to be read). */
  #lastEditorPod(name: string): V1Pod | undefined {
    const pod = this.#pods.get(this.#names.editorPod(name));
    return pod && this.#names.serverOf(pod.metadata) === name ? pod : undefined;
  }

  onChange(listener: (name: string) => void): void {
    this.#listeners.push(listener);
  }

  onEvent(listener: (name: string, event: RuntimeEvent) => void): void {
    this.#eventListeners.push(listener);
  }

  dispose(): void {
    this.#disposed = true;
    this.#listeners.length = 0;
    this.#eventListeners.length = 0;
    void this.#podWatch.close();
    void this.#closeEvents();
  }

  #log(level: 'info' | 'warn' | 'error', message: string): void {
    this.#options.log?.(level, message);
  }
}
