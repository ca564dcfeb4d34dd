// Which runtime runs the editors, chosen by the settings (runtime.kind, DEVBOX_RUNTIME): local
// code-server processes, whose output the log hub follows in files, or Pods in a Kubernetes
// cluster, whose output the hub reads from the runtime's log stream while each editor runs.
import { manifestsNamespace } from './config/runtime-config.ts';
import type { RuntimeSettings, Settings } from './config/settings.ts';
import type { ServerIndex } from './index/server-index.ts';
import type { LogHub } from './logs/index.ts';
import { StartupError } from './service-errors.ts';
import type { ExtensionInstaller } from './extensions/installer.ts';
import { editorOutputFiles } from './logs/index.ts';
import type { EditorBinary } from './runtime/editor-binary.ts';
import type { EditorRuntime } from './runtime/interface.ts';
import { DEFAULT_EDITOR_IMAGE, type KubernetesRuntimeOptions } from './runtime/kubernetes/options.ts';
import type { KubeClient } from './runtime/kubernetes/client.ts';
import { processRuntime } from './runtime/processes.ts';
import type { ClusterManifestStore } from './cluster/open.ts';
import { ManifestStore } from './manifests/store.ts';
import type { DataLayout } from './workspace/layout.ts';

/** How long the service waits for a cluster runtime's first list of its objects before it gives up starting. */
export const RUNTIME_SYNC_TIMEOUT_MS = 60_000;

type KubernetesSettings = Extract<RuntimeSettings, { kind: 'kubernetes' }>;

/** The Kubernetes runtime's options from the settings: the config's section, its namespace resolved, the pinned image by default. */
export function kubernetesRuntimeOptions(settings: KubernetesSettings, log: (message: string) => void): KubernetesRuntimeOptions {
  // Only the service reads where the manifests come from and whether replicas elect a leader.
  const { source: _source, leaderElection: _leaderElection, namespace, image, ...rest } = structuredClone(settings.kubernetes);
  return {
    ...rest,
    namespace,
    image: image ?? DEFAULT_EDITOR_IMAGE,
    log: (level, message) => log(`kubernetes${level === 'info' ? '' : ` (${level})`}: ${message}`),
  };
}

/** The runtime the service runs, with the cluster's client when it is the Kubernetes runtime (the manifests may be its objects). */
export type BuiltRuntime = EditorRuntime & { cluster?: KubeClient };

/**
 * The one place that knows which runtimes there are: the settings' runtime.kind built into its
 * two halves. Local processes: the servers' folders in the data folder and code-server processes
 * writing their output where the log hub follows it (`installer`, the local code-server's
 * extension CLI, is theirs). The Kubernetes runtime, loaded only then (its client is not small).
 */
export async function buildRuntime(
  settings: Settings, local: { editor?: EditorBinary; installer?: ExtensionInstaller; layout: DataLayout; env?: NodeJS.ProcessEnv }, log: (message: string) => void,
): Promise<BuiltRuntime> {
  if (settings.runtime?.kind === 'kubernetes') {
    const { createKubernetesRuntime } = await import('./runtime/kubernetes/runtime.ts');
    const options = kubernetesRuntimeOptions(settings.runtime, log);
    log(`runtime: kubernetes, namespace ${options.namespace} (from ${settings.runtime.namespaceFrom}), image ${options.image}`);
    const runtime = createKubernetesRuntime(options);
    return { ...runtime, cluster: runtime.workload.client };
  }
  const { editor, installer, layout, env } = local;
  if (!editor || !installer) throw new Error('the process runtime needs the code-server to launch');
  return processRuntime({ bin: editor.path, layout, installer, outputOf: (name) => editorOutputFiles(layout.logsDir, name), ...(env ? { env } : {}) });
}

/** True when the editors run on this machine: the local code-server is needed (Pods run the editor's image). */
export function runsLocalEditors(settings: Settings): boolean {
  return settings.runtime?.kind !== 'kubernetes';
}

/** The Kubernetes settings when the service runs editors as Pods with leader election among replicas. */
export function leaderElectionOf(settings: Settings): KubernetesSettings['kubernetes'] | undefined {
  const runtime = settings.runtime;
  return runtime?.kind === 'kubernetes' && runtime.kubernetes.leaderElection ? runtime.kubernetes : undefined;
}

/**
 * Where the servers' manifests are: the manifests folder, or, with runtime.kubernetes.source crd,
 * the namespace's EditorServer objects (read from the watch's cache, no copy on disk). The
 * cluster's code is loaded only then.
 */
export async function manifestStoreFor(
  settings: Settings, layout: DataLayout, cluster: KubeClient | undefined, log: (message: string) => void,
): Promise<ManifestStore | ClusterManifestStore> {
  const namespace = manifestsNamespace(settings.runtime);
  if (namespace === undefined || !cluster) return new ManifestStore(settings.manifestsDir, layout.statusDir);
  const { openClusterManifests } = await import('./cluster/open.ts');
  log(`manifests: the EditorServer objects of namespace ${namespace}`);
  // Over the runtime's own client: the same cluster and namespace.
  return openClusterManifests({ client: cluster, dir: layout.clusterManifestsDir, statusDir: layout.statusDir, log });
}

/**
 * Waits until the cluster's manifests are listed, so the controller lists what the cluster holds; a cluster that does not answer in time refuses the start.
 */
export async function manifestsSynced(store: ManifestStore, log: (message: string) => void, timeoutMs = RUNTIME_SYNC_TIMEOUT_MS): Promise<void> {
  const cluster = store as Partial<ClusterManifestStore>;
  if (typeof cluster.start !== 'function') return;
  await withinStartup(cluster.start(), timeoutMs,
    `the EditorServer objects could not be listed after ${timeoutMs / 1000} s: check that the cluster answers and that the CRD is installed (kubectl apply -f deploy/kubernetes/crd.yaml)`);
  log(`manifests: ${(await store.list()).length} EditorServer object(s) listed`);
}

/** What GET /health says runs the editors: the local code-server, or the image of their Pods. */
export function editorDescription(settings: Settings, editor: EditorBinary | undefined): string {
  if (editor) return editor.path;
  const image = settings.runtime?.kind === 'kubernetes' ? settings.runtime.kubernetes.image ?? DEFAULT_EDITOR_IMAGE : 'none';
  return `${image} (Kubernetes)`;
}

/**
 * The log hub reads each server's editor output while its status names a running editor, and a
 * few seconds after, for its last lines (its files, or for a runtime that writes none here its log
 * stream: from its start for an editor launched since `startedAt`, this run of the service, from
 * now on for one adopted). A stopped server's output is not looked at.
 */
export function followEditorOutput(index: ServerIndex, logs: LogHub, startedAt: number): void {
  const look = (name: string) => {
    const status = index.serverNamed(name)?.status;
    if (!status?.runtimeRef) return logs.unfollow(name);
    logs.follow(name, Date.parse(status.startTime ?? '') >= startedAt ? 'start' : 'now');
  };
  index.on('changed', look);
  // An editor adopted at start-up runs with its status unchanged: its first reconcile says so.
  index.on('reconciled', ({ name }) => look(name));
}

/**
 * Waits until the runtime's view is current (a cluster runtime's first list of its objects), so
 * the controller adopts from it; a cluster that does not answer in time refuses the start.
 */
export async function runtimeSynced(runtime: EditorRuntime, log: (message: string) => void, timeoutMs = RUNTIME_SYNC_TIMEOUT_MS): Promise<void> {
  const late = setTimeout(() => log(`runtime: waiting for the ${runtime.kind} runtime's first view of its editors…`), 2000);
  try {
    await withinStartup(runtime.workload.synced().catch((error) => {
      throw new StartupError(`the ${runtime.kind} runtime could not see its editors: ${(error as Error).message}`);
    }), timeoutMs, `the ${runtime.kind} runtime had no view of its editors after ${timeoutMs / 1000} s: check that the cluster answers (kubeconfig, namespace, the service account's permissions)`);
  } finally {
    clearTimeout(late);
  }
}

/** `work`, or a StartupError saying `message` once `timeoutMs` has passed without it. */
async function withinStartup<T>(work: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new StartupError(message)), timeoutMs);
    })]);
  } finally {
    clearTimeout(timer);
  }
}

