// What the Kubernetes runtime is given: where the cluster is, which namespace, the editor's image
// and the defaults for each server's objects. The config's `runtime.kubernetes` section becomes
// this (src/service-parts.ts); tests give the pod template's extras to run code-server from the
// host's cache in a tiny image, as docs/kubernetes-test-cluster.md explains.
import type { ResourceRequirements } from '../interface.ts';

/** A volume and where the editor's container (and the storage helper's) mounts it: only hostPath and configMap, for a development cluster. */
export interface ExtraMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  hostPath?: { path: string; type?: string };
  configMap?: { name: string };
}

export interface KubernetesRuntimeOptions {
  /** Path of a kubeconfig file; unset: KUBECONFIG, ~/.kube/config, else the in-cluster service account. */
  kubeconfig?: string;
  /** The namespace every object of this service lives in. */
  namespace: string;
  /** The editor's image (code-server's published image at the pinned version unless the config says otherwise). */
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** The command that runs code-server inside the image; code-server's own arguments follow it. */
  command: string[];
  /** Each server's volume (workspace and editor data): its size and class (unset: the cluster's default class). */
  storage: { size: string; storageClassName?: string };
  /** Requests and limits for a server whose manifest gives none. */
  resources: ResourceRequirements;
  /** The user and group the editor runs as (never root). */
  runAsUser: number;
  /** Host folders or config maps mounted into the editor's Pod (development clusters: code-server from the host). */
  extraMounts: ExtraMount[];
  /** Environment given to the editor's container. */
  env: Record<string, string>;
  /** Prefix of every object name: `<prefix><server>` (default `devbox-`). */
  namePrefix: string;
  /** Log lines for the service's own log. */
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/** code-server's published image at the version the project builds (package.json's `codeServer`; a test keeps the two equal). */
export const DEFAULT_EDITOR_IMAGE = 'docker.io/codercom/code-server:4.139.1';
