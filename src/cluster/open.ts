// The cluster's manifests, opened from the runtime's settings: a client of the cluster the editors
// run in, the namespace's EditorServer objects, and their working copy in the data folder.
import { KubeClient } from '../runtime/kubernetes/client.ts';
import { ClusterManifestStore } from './cluster-store.ts';
import { EditorServerApi } from './editor-servers.ts';

export { ClusterManifestStore };

export interface ClusterManifestsOptions {
  namespace: string;
  kubeconfig?: string;
  /** The working copy's folder. */
  dir: string;
  statusDir: string;
  log: (message: string) => void;
}

export function openClusterManifests(options: ClusterManifestsOptions): ClusterManifestStore {
  const api = new EditorServerApi(new KubeClient(options.namespace, options.kubeconfig));
  return new ClusterManifestStore({ dir: options.dir, statusDir: options.statusDir, api, log: options.log });
}
