// The cluster's manifests: over the client of the cluster (and namespace) the editors run in, the
// namespace's EditorServer objects.
import type { KubeClient } from '../runtime/kubernetes/client.ts';
import { ClusterManifestStore } from './cluster-store.ts';
import { EditorServerApi } from './editor-servers.ts';

export { ClusterManifestStore };

export interface ClusterManifestsOptions {
  /** The runtime's client: its namespace is the objects'. */
  client: KubeClient;
  /** Where earlier versions kept a working copy of the objects (removed at start). */
  dir: string;
  statusDir: string;
  log: (message: string) => void;
}

export function openClusterManifests(options: ClusterManifestsOptions): ClusterManifestStore {
  const api = new EditorServerApi(options.client);
  return new ClusterManifestStore({ dir: options.dir, statusDir: options.statusDir, api, log: options.log });
}
