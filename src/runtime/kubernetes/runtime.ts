// The Kubernetes runtime: each server's editor is the one Pod of a StatefulSet, its storage a
// PersistentVolumeClaim (objects.ts), reached through exec (storage.ts). Nothing is made on the
// cluster for a server before its editor's first start: then its anchor, claim, Service and
// StatefulSet, whose Pod's init container prepares the volume. The runtime watches its
// Pods with the project's own list-then-watch loop and answers state(), adopt() and list() from
// that view, never with a question to the API server on the way.
//
// An editor is one Pod (namespace, name, uid). When its container ends, on its own or killed,
// that editor has exited, with the container's exit code and the kubelet's reason: the runtime
// keeps its last output, scales the StatefulSet to zero and deletes the Pod, so the controller's
// restartPolicy decides what happens next, as with local processes (the kubelet's own restart of
// the container is not relied upon). What the runtime asks of the API server goes through
// ClusterApi (cluster-api.ts): KubeClient in the service, an in-memory cluster in tests.
import { EventEmitter } from 'node:events';
import type { V1Pod } from '@kubernetes/client-node';
import type { EditorWorkload } from '../editor-workload.ts';
import {
  EditorNotPlaced, type EditorEndpoint, type EditorOutput, type EditorRuntime, type EditorState, type EditorUsage,
  type RunningEditor, type RuntimeEvent, type RuntimeRef, type StartedEditor, type StartSpec,
} from '../interface.ts';
import { KubeClient, messageOf } from './client.ts';
import type { ClusterApi } from './cluster-api.ts';
import { watchEvents } from './cluster-events.ts';
import { Endings, type Ending } from './endings.ts';
import { ListWatch } from './list-watch.ts';
import { Names, ROLE_LABEL, selector } from './names.ts';
import { ServerObjects } from './objects.ts';
import type { KubernetesRuntimeOptions } from './options.ts';
import { containerPort, editorEnded, editorStatus, isOver, isRunningContainer, podEndpoint, podIp, podProblem, restarted, type ContainerEnd } from './pod-state.ts';
import { lastOutput, podLogs } from './pod-logs.ts';
import { cachedSummaries, summaryTrouble, summaryUsage } from './usage.ts';
import { KubernetesStorage } from './storage.ts';
import { Workload } from './workload.ts';

/** How long start() waits for the Pod to exist and get an address. */
const PLACE_TIMEOUT_MS = 60_000;

/**
 * The Kubernetes runtime's two halves over a cluster `C`: by default KubeClient, made from the
 * options' kubeconfig (the service's); tests give an in-memory cluster. The storage reaches a
 * volume through the Pods the workload watches, so the workload makes it.
 */
export function createKubernetesRuntime<C extends ClusterApi = KubeClient>(
  options: KubernetesRuntimeOptions, client?: C,
): EditorRuntime & { workload: KubernetesWorkload<C>; storage: KubernetesStorage } {
  const workload = new KubernetesWorkload(options, client);
  return { kind: 'kubernetes', output: 'stream', workload, storage: workload.storage };
}

/** The Kubernetes runtime's workload half: each editor the one Pod of a StatefulSet, watched through the project's list-then-watch loop. */
export class KubernetesWorkload<C extends ClusterApi = KubeClient> implements EditorWorkload {
  readonly kind = 'kubernetes';
  readonly runsImages = true;
  readonly #options: KubernetesRuntimeOptions;
  /** Its conversations with the API server, shared with what else the service asks of that cluster and namespace. */
  readonly client: C;
  readonly #names: Names;
  readonly #objects: ServerObjects;
  /** The servers' volumes, reached through the Pods this workload watches. */
  readonly storage: KubernetesStorage;
  readonly #workload: Workload;
  /** Every Pod of this service in the namespace (editors and storage helpers), by name. */
  readonly #pods = new Map<string, V1Pod>();
  /** How its editors ended, by Pod uid. */
  readonly #ended = new Endings();
  /** What was last said about each editor Pod, to report changes only. */
  readonly #seen = new Map<string, string>();
  readonly #changes = new EventEmitter();
  readonly #listeners: Array<(name: string) => void> = [];
  readonly #eventListeners: Array<(name: string, event: RuntimeEvent) => void> = [];
  readonly #podWatch: ListWatch<V1Pod>;
  /** The server each object name of this service belongs to (for the events about them). */
  readonly #serverOfObject = new Map<string, string>();
  readonly #closeEvents: () => Promise<void>;
  #disposed = false;

  constructor(options: KubernetesRuntimeOptions, client?: C) {
    this.#options = options;
    this.client = client ?? (new KubeClient(options.namespace, options.kubeconfig) as ClusterApi as C);
    this.#names = new Names(options.namePrefix, options.namespace);
    this.#objects = new ServerObjects(this.#names, options);
    this.storage = new KubernetesStorage({
      client: this.client, names: this.#names, objects: this.#objects, editorCommand: options.command,
      runningEditor: (name) => this.#servingPod(name),
      helperPod: (name) => this.#pods.get(this.#names.storagePod(name)),
      known: (name) => this.#know(name),
      removed: (name) => this.#forget(name),
      vsixDir: process.env.DEVBOX_VSIX_DIR || undefined,
    });
    this.#workload = new Workload({
      client: this.client, names: this.#names, objects: this.#objects,
      owner: (name) => this.storage.owner(name),
      lastEditorPod: (name) => this.#lastEditorPod(name),
      log: (level, message) => this.#log(level, message),
    });
    this.#changes.setMaxListeners(0);
    const path = `/api/v1/namespaces/${options.namespace}/pods`;
    this.#podWatch = new ListWatch<V1Pod>(this.client.transport<V1Pod>('v1', 'Pod', path, selector()), {
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
    this.#closeEvents = watchEvents(this.client, (objectName) => this.#serverOfObject.get(objectName), (name, event) => {
      for (const listener of this.#eventListeners) listener(name, event);
    }, (error) => this.#log('warn', `watching events in ${options.namespace}: ${error.message}`));
  }

  synced(): Promise<void> {
    return this.#podWatch.synced();
  }

  // --- The watch cache ---

  /** Remembers the names of a server's objects, whose events are then the server's. */
  #know(name: string): void {
    for (const objectName of [this.#names.object(name), this.#names.editorPod(name), this.#names.storagePod(name)]) this.#serverOfObject.set(objectName, name);
  }

  #upsert(pod: V1Pod): void {
    const podName = pod.metadata?.name;
    if (!podName) return;
    this.#pods.set(podName, pod);
    const name = this.#names.serverOf(pod.metadata);
    if (name) this.#know(name);
    if (!name || pod.metadata?.labels?.[ROLE_LABEL] !== 'editor') {
      this.#changes.emit(name ?? '', pod);
      return;
    }
    const uid = pod.metadata!.uid!;
    const end = editorEnded(pod);
    let ended = this.#ended.get(uid);
    if (end && !ended) {
      ended = this.#ended.add(uid, { name, ref: this.#names.refOf(pod), endpoint: podEndpoint(pod), exit: undefined, stopped: false, gone: false });
      this.#endEditor(name, pod, ended, end);
    } else if (end && ended && !ended.exit) {
      // A stop's end: how it ended, for state().
      Object.assign(ended, { exit: { code: end.code, signal: end.signal }, reason: end.reason, containerId: end.containerId });
    }
    // What state() answers from (not readiness: whether it serves is the health checks' to say).
    const said = JSON.stringify([isRunningContainer(pod), podIp(pod), podProblem(pod)?.reason, this.#ended.has(uid), ended?.exit !== undefined, isOver(pod)]);
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
    this.storage.forgetPod(uid);
    const ended = this.#ended.get(uid);
    if (ended) ended.gone = true;
    if (name && pod.metadata?.labels?.[ROLE_LABEL] === 'editor') this.#notify(name);
    this.#changes.emit(name ?? '', pod);
  }

  /** An editor's container ended on its own: record how, keep its last output, stop its StatefulSet, and let its Pod go. */
  #endEditor(name: string, pod: V1Pod, ended: Ending, { containerId, reason, ...exit }: ContainerEnd): void {
    Object.assign(ended, { exit, reason, containerId });
    this.#log('info', `the editor of ${name} (Pod ${pod.metadata?.name}) ended: ${exit.signal ?? `exit code ${exit.code}`}${reason ? ` (${reason})` : ''}`);
    ended.cleanup = this.#cleanUp(name, pod, ended).finally(() => (ended.cleanup = undefined));
  }

  async #cleanUp(name: string, pod: V1Pod, ended: Ending): Promise<void> {
    // The kubelet runs the container again, which ends at once (objects.ts: it runs once per Pod).
    // Only once it has started (or after a few seconds, should it not) do the StatefulSet and the
    // Pod go: the kubelet of Kubernetes 1.20 may keep a Pod deleted mid-restart for a minute.
    const uid = pod.metadata!.uid!;
    // What the editor said, read at once, while its run is the container's current one: the
    // kubelet runs the container again within seconds, and once that run has ended too it may
    // remove this one's log (it keeps one dead container per container of a Pod).
    ended.output = await lastOutput(this.client, pod).catch(() => undefined);
    if (ended.output !== undefined) this.#changes.emit(name, pod);
    const deadline = Date.now() + 3000;
    while (!this.#disposed && Date.now() < deadline) {
      const now = this.#pods.get(pod.metadata!.name!);
      if (now?.metadata?.uid !== uid || restarted(now, ended.containerId)) break;
      await this.#nextChange(name, deadline - Date.now());
    }
    // Not read at once (the API server away, say): read now, from the previous run if it restarted.
    const now = this.#pods.get(pod.metadata!.name!);
    if (ended.output === undefined && now?.metadata?.uid === uid) {
      ended.output = await lastOutput(this.client, now).catch(() => undefined);
      if (ended.output !== undefined) this.#changes.emit(name, pod);
    }
    if (ended.stopped || this.#disposed) return;
    try {
      await this.#workload.scale(name, 0);
      await this.client.delete('v1', 'Pod', pod.metadata!.name!, { uid, graceSeconds: 1 });
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

  /** A server whose storage was removed: what was kept of its editors goes too. */
  #forget(name: string): void {
    this.#ended.forget(name);
    for (const [objectName, server] of this.#serverOfObject) if (server === name) this.#serverOfObject.delete(objectName);
  }

  // --- The editor ---

  // No portIsFree: route numbers are only numbers here, the editor serves on its own Pod's address.

  async start(spec: StartSpec): Promise<StartedEditor> {
    const { name } = spec;
    this.#know(name);
    // An editor that ended is cleaned up first: its scale to zero must not undo this start's.
    await this.#ended.cleanedUp(name);
    const earlier = this.#ended.uidsOf(name);
    const owner = await this.storage.owner(name);
    await this.storage.ensureClaim(name);
    // One Pod on the volume at a time: a storage helper (if a call made one) goes before the editor comes.
    await this.storage.releaseHelper(name);
    await this.client.apply(this.#objects.service(name, owner, spec.port));
    await this.#workload.scale(name, 1, { port: spec.port, resources: spec.resources, uid: spec.uid });
    await this.#workload.replaceUnstarted(name, this.#editorPod(name));
    const deadline = Date.now() + PLACE_TIMEOUT_MS;
    while (true) {
      const pod = this.#editorPod(name);
      const endpoint = pod && podEndpoint(pod);
      const problem = pod && podProblem(pod);
      if (problem?.reason === 'Unschedulable') throw new EditorNotPlaced(problem);
      // Once the kubelet says the editor's container runs (after its volume was prepared), or why
      // not: its state and the health checks then agree. One that ended at once is reported too.
      if (pod && endpoint && (isRunningContainer(pod) || problem || Date.now() > deadline)) return { ref: this.#names.refOf(pod), endpoint };
      // This start's editor ended on its own before it was seen running (even once its Pod is
      // gone): its reference, whose state says how it ended.
      const crashed = pod ? undefined : this.#ended.crashedSince(name, earlier);
      if (crashed?.endpoint) return { ref: crashed.ref, endpoint: crashed.endpoint };
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
    const pod = this.#pods.get(named.pod) ?? (await this.client.read<V1Pod>('v1', 'Pod', named.pod));
    // A Pod of that name that is not this server's (a stranger's, or someone's copy) is never touched.
    if (pod && this.#names.serverOf(pod.metadata) !== name) return false;
    // Marked stopped first, so its end is read as this stop, not an exit; unmarked when the stop
    // could not be asked for (the API server away), so the next reconcile asks again.
    const own = pod?.metadata?.uid === named.uid;
    const before = this.#ended.get(named.uid);
    const wasStopped = before?.stopped;
    if (own) {
      if (before) before.stopped = true;
      else this.#ended.add(named.uid, { name, ref, endpoint: podEndpoint(pod), exit: undefined, stopped: true, gone: false });
    }
    try {
      await this.#workload.scale(name, 0);
      if (own) await this.client.delete('v1', 'Pod', named.pod, { uid: named.uid, graceSeconds: Math.max(1, Math.ceil(graceMs / 1000)) });
    } catch (error) {
      const now = this.#ended.get(named.uid);
      if (own && before) before.stopped = wasStopped ?? false;
      else if (own && now && !now.gone && now.exit === undefined) this.#ended.delete(named.uid);
      throw error;
    }
    return true;
  }

  state(name: string, ref: RuntimeRef): EditorState {
    const named = this.#names.podOf(name, ref);
    if (!named) return { state: 'foreign' };
    const pod = this.#pods.get(named.pod);
    const ended = this.#ended.get(named.uid);
    const own = pod?.metadata?.uid === named.uid;
    if (own && this.#names.serverOf(pod.metadata) !== name) return { state: 'foreign' };
    if (ended) {
      // Once its Pod is gone without a word of how it ended, that is all there is to know.
      const exit = ended.exit ?? (ended.gone || !own ? { code: null, signal: null } : undefined);
      return { state: 'exited', exit, ...(ended.reason ? { reason: ended.reason } : {}) };
    }
    if (!own) return { state: 'gone' };
    if (isOver(pod)) return { state: 'exited', exit: undefined };
    const problem = podProblem(pod);
    // Running while its container runs, as a process runs: whether it serves is the health checks' to say.
    return { state: isRunningContainer(pod) ? 'running' : 'starting', endpoint: podEndpoint(pod), ...(problem ? { problem } : {}) };
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

  /** The cluster's scheduler decides where editors fit: no memory of ours to share out. */
  memory(): undefined { return undefined; }

  #summaries: ReturnType<typeof cachedSummaries> | undefined;
  readonly #summaryTrouble = summaryTrouble((level, message) => this.#log(level, message));

  /** CPU and memory from the kubelets' summaries (through the API server), by reference. */
  usage(refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>> {
    return summaryUsage(this.#summaries ??= cachedSummaries(this.client), refs, (ref) => {
      const pod = typeof ref.pod === 'string' ? this.#pods.get(ref.pod) : undefined;
      return pod && pod.metadata?.uid === ref.uid && !this.#ended.has(String(ref.uid)) && !isOver(pod) ? pod : undefined;
    }, this.#summaryTrouble);
  }

  logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
    return podLogs({
      client: this.client,
      editorPod: (server) => this.#lastEditorPod(server),
      keptOutput: (server) => this.#ended.lastOutput(server),
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
    this.storage.dispose();
    this.#listeners.length = 0;
    this.#eventListeners.length = 0;
    void this.#podWatch.close();
    void this.#closeEvents();
  }

  #log(level: 'info' | 'warn' | 'error', message: string): void {
    this.#options.log?.(level, message);
  }
}
