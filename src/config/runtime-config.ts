// The config's `runtime` section: where editors run (local processes, or Pods in a Kubernetes
// cluster) and, for a cluster, how each server's objects are made. The file gives the policy;
// DEVBOX_RUNTIME, DEVBOX_K8S_NAMESPACE and DEVBOX_LEADER_ELECTION, and the namespace the service
// itself runs in, are laid over it at start-up (runtimeFrom), as the composition root builds the
// runtime from that.
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { resourceProblems, type Resources } from '../manifests/resources.ts';

export type RuntimeKind = 'process' | 'kubernetes';

/** A volume mounted into each editor's Pod: a host folder or a config map (a development cluster). */
export interface ExtraMountConfig {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  hostPath?: { path: string; type?: string };
  configMap?: { name: string };
}

/** Where the servers' manifests come from on a cluster: the manifests folder, or EditorServer objects in the namespace. */
export type ManifestSource = 'files' | 'crd';

export interface KubernetesConfig {
  /**
   * files: the manifests folder, as with local processes. crd: the EditorServer objects in the
   * namespace are the manifests (kubectl, GitOps tools and the API act on the same objects).
   * DEVBOX_K8S_SOURCE wins over it.
   */
  source: ManifestSource;
  /** Unset: DEVBOX_K8S_NAMESPACE, else the service's own namespace in a cluster, else `default`. */
  namespace?: string;
  /** Unset: code-server's published image at the pinned version (the runtime's default). */
  image?: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  command: string[];
  storage: { size: string; storageClassName?: string };
  /** Requests and limits of an editor whose manifest gives none; spec.resources is laid over them. */
  resources: Resources;
  runAsUser: number;
  extraMounts: ExtraMountConfig[];
  env: Record<string, string>;
  namePrefix: string;
  /** Unset: KUBECONFIG, ~/.kube/config, else the Pod's service account. */
  kubeconfig?: string;
  /** Replicas contend for a Lease and only its holder serves (src/runtime/kubernetes/leader.ts). */
  leaderElection: boolean;
}

export interface RuntimeConfig {
  kind: RuntimeKind;
  kubernetes: KubernetesConfig;
}

export const DEFAULT_RUNTIME_CONFIG: RuntimeConfig = {
  kind: 'process',
  kubernetes: {
    source: 'files',
    imagePullPolicy: 'IfNotPresent',
    command: ['code-server'],
    storage: { size: '10Gi' },
    resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
    runAsUser: 1000,
    extraMounts: [],
    env: {},
    namePrefix: 'devbox-',
    leaderElection: false,
  },
};

/** The given section over the defaults: kubernetes and its storage key by key; resources, extraMounts and env replace the defaults whole. */
export function runtimeConfigOver(given: Partial<Omit<RuntimeConfig, 'kubernetes'>> & { kubernetes?: Partial<KubernetesConfig> } | undefined): RuntimeConfig {
  const defaults = structuredClone(DEFAULT_RUNTIME_CONFIG);
  return {
    kind: given?.kind ?? defaults.kind,
    kubernetes: {
      ...defaults.kubernetes,
      ...given?.kubernetes,
      storage: { ...defaults.kubernetes.storage, ...given?.kubernetes?.storage },
    },
  };
}

/** Where the editors' Pods' volume is mounted: extra mounts stay out of it. */
const DATA_ROOT = '/data';

/** What JSON Schema cannot say about the section, each placed at its field: (path, message). */
export function runtimeConfigProblems(runtime: RuntimeConfig, problem: (path: (string | number)[], message: string) => void): void {
  const at = ['runtime', 'kubernetes'];
  for (const [path, message] of resourceProblems(runtime.kubernetes.resources)) problem([...at, 'resources', ...path], message);
  const names = new Set<string>();
  runtime.kubernetes.extraMounts.forEach((mount, i) => {
    if (Boolean(mount.hostPath) === Boolean(mount.configMap)) {
      problem([...at, 'extraMounts', i], `mount "${mount.name}" must give exactly one of hostPath or configMap`);
    }
    if (names.has(mount.name)) problem([...at, 'extraMounts', i, 'name'], `"${mount.name}" is the name of an earlier mount: give each mount its own name`);
    names.add(mount.name);
    const path = mount.mountPath.replace(/\/+$/, '') || '/';
    if (path === '/' || path === DATA_ROOT || path.startsWith(`${DATA_ROOT}/`)) {
      problem([...at, 'extraMounts', i, 'mountPath'], `"${mount.mountPath}" would cover ${path === '/' ? 'the whole container' : `the server's volume at ${DATA_ROOT}`}: mount it somewhere else, such as /opt/${mount.name}`);
    }
  });
}

/** What the service runs editors with, as decided at start-up. */
export type RuntimeSettings =
  | { kind: 'process' }
  | { kind: 'kubernetes'; kubernetes: KubernetesConfig & { namespace: string }; namespaceFrom: string };

/** The namespace whose EditorServer objects are the manifests (runtime.kubernetes.source: crd); undefined when a folder is. */
export function manifestsNamespace(runtime: RuntimeSettings | undefined): string | undefined {
  return runtime?.kind === 'kubernetes' && runtime.kubernetes.source === 'crd' ? runtime.kubernetes.namespace : undefined;
}

/** Where a Pod finds the namespace it runs in. */
export const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The runtime the service starts: DEVBOX_RUNTIME over runtime.kind; for a cluster, the namespace
 * from DEVBOX_K8S_NAMESPACE, else runtime.kubernetes.namespace, else the one this service runs in
 * (its service account's), else `default`. Throws an Error naming the variable for a bad value.
 */
export function runtimeFrom(
  env: NodeJS.ProcessEnv, runtime: RuntimeConfig, readNamespaceFile: () => string | undefined = ownNamespace,
): RuntimeSettings {
  const asked = env.DEVBOX_RUNTIME?.trim();
  if (asked && asked !== 'process' && asked !== 'kubernetes') {
    throw new Error(`DEVBOX_RUNTIME="${asked}" must be process or kubernetes, or unset for the config's runtime.kind (${runtime.kind})`);
  }
  const kind = (asked || runtime.kind) as RuntimeKind;
  const election = env.DEVBOX_LEADER_ELECTION?.trim();
  if (election && election !== '1' && election !== '0') {
    throw new Error(`DEVBOX_LEADER_ELECTION="${election}" must be 1 (on) or 0 (off), or unset for the config's runtime.kubernetes.leaderElection (${runtime.kubernetes.leaderElection})`);
  }
  if (kind === 'process') {
    if (election === '1') {
      throw new Error('DEVBOX_LEADER_ELECTION=1 needs the Kubernetes runtime (its Lease lives in the cluster): set DEVBOX_RUNTIME=kubernetes, or unset DEVBOX_LEADER_ELECTION');
    }
    return { kind };
  }
  const leaderElection = election ? election === '1' : runtime.kubernetes.leaderElection;
  const fromEnv = env.DEVBOX_K8S_NAMESPACE?.trim();
  if (fromEnv && !(DNS_LABEL.test(fromEnv) && fromEnv.length <= 63)) {
    throw new Error(`DEVBOX_K8S_NAMESPACE="${fromEnv}" is not a namespace name (lower-case letters, digits and "-", at most 63)`);
  }
  let namespace: string | undefined = fromEnv;
  let namespaceFrom = 'DEVBOX_K8S_NAMESPACE';
  if (!namespace && runtime.kubernetes.namespace) [namespace, namespaceFrom] = [runtime.kubernetes.namespace, 'runtime.kubernetes.namespace'];
  if (!namespace) [namespace, namespaceFrom] = [readNamespaceFile()?.trim() || undefined, 'the namespace the service runs in'];
  if (!namespace) [namespace, namespaceFrom] = ['default', 'the default'];
  const source = env.DEVBOX_K8S_SOURCE?.trim() || runtime.kubernetes.source;
  if (source !== 'files' && source !== 'crd') {
    throw new Error(`DEVBOX_K8S_SOURCE="${source}" must be files or crd, or unset for the config's runtime.kubernetes.source (${runtime.kubernetes.source})`);
  }
  const given = runtime.kubernetes.kubeconfig;
  const kubeconfig = given === undefined ? undefined : resolve(given.replace(/^~(?=\/|$)/, homedir()));
  return {
    kind,
    kubernetes: { ...structuredClone(runtime.kubernetes), namespace, source, leaderElection, ...(kubeconfig ? { kubeconfig } : {}) },
    namespaceFrom,
  };
}

/** The namespace of the Pod this service runs in, or undefined outside a cluster. */
function ownNamespace(): string | undefined {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8');
  } catch {
    return undefined;
  }
}
