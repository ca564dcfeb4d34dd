// The cluster's manifests: over the client of the cluster (and namespace) the editors run in, the
// namespace's EditorServer objects and their working copy in the data folder.
import type { KubeClient } from '../runtime/kubernetes/client.ts';
import { ClusterManifestStore } from './cluster-store.ts';
import { EditorServerApi } from './editor-servers.ts';

export { ClusterManifestStore };

export interface ClusterManifestsOptions {
  /** The runtime's client: its namespace is the objects'. */
  client: KubeClient;
  /** The working copy's folder. */
  dir: string;
  statusDir: string;
  log: (message: string) => void;
}

export function openClusterManifests(options: ClusterManifestsOptions): ClusterManifestStore {
  const api = new EditorServerApi(options.client);
  return new ClusterManifestStore({ dir: options.dir, statusDir: options.statusDir, api, log: options.log });
}
