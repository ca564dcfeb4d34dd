// What the Kubernetes runtime is given: where the cluster is, which namespace, the editor's image
// and the defaults for each server's objects. The config's `runtime.kubernetes` section becomes
// this (src/service-runtime.ts); tests give the pod template's extras to run code-server from the
// host's cache in a tiny image, as docs/kubernetes-test-cluster.md explains.
import type { ExtraMountConfig, KubernetesConfig } from '../../config/runtime-config.ts';

/** A volume and where the editor's container (and the storage helper's) mounts it: only hostPath and configMap, for a development cluster. */
export type ExtraMount = ExtraMountConfig;

/**
 * The config's `runtime.kubernetes` section as the runtime takes it: one type, the config's, with
 * its namespace resolved and its image chosen (code-server's published image at the pinned version
 * unless the config names one), and a log. What only the service reads (where the manifests come
 * from, leader election) is left out.
 */
export type KubernetesRuntimeOptions = Omit<KubernetesConfig, 'source' | 'leaderElection' | 'namespace' | 'image'> & {
  /** The namespace every object of this service lives in. */
  namespace: string;
  /** The editor's image. */
  image: string;
  /**
   * How code-server reaches an editor that runs in an image of its own (devcontainer.json's
   * `image`): `copy` (an init container copies it out of the editor image into the volume) or
   * `mounts` (the extra mounts hold it). Unset: `mounts` when the command's launcher lies in an
   * extra mount, else `copy` (foreign-image.ts).
   */
  codeServerFrom?: 'copy' | 'mounts';
  /** Log lines for the service's own log. */
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
};

/** code-server's published image at the version the project builds (package.json's `codeServer`; a test keeps the two equal). */
export const DEFAULT_EDITOR_IMAGE = 'docker.io/codercom/code-server:4.139.1';
