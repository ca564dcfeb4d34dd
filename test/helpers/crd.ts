// The EditorServer CRD on the test cluster: installing it from deploy/kubernetes/crd.yaml, reading
// objects back, and writing an object's status as someone other than the controller would.
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { projectFile } from '../../src/core/project.ts';
import { getObject, kubectl, type TestCluster } from './cluster.ts';

export const CRD_FILE = projectFile('deploy/kubernetes/crd.yaml');

/** Installs (or updates) the CRD and waits until the API server serves it. */
export async function installCrd(cluster: TestCluster): Promise<void> {
  await kubectl(cluster, ['apply', '-f', CRD_FILE]);
  await kubectl(cluster, ['wait', '--for', 'condition=established', '--timeout', '60s', 'crd/editorservers.devbox.dev']);
}

/** The EditorServer object, or undefined. */
export function editorServer(cluster: TestCluster, namespace: string, name: string): Promise<any> {
  return getObject(cluster, ['editorserver', name, '-n', namespace]);
}

/** Replaces the object's status through /status, as a person with access to the namespace could. */
export async function forgeStatus(cluster: TestCluster, namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
  const config = new KubeConfig();
  config.loadFromFile(cluster.kubeconfig);
  await config.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
    { group: 'devbox.dev', version: 'v1alpha1', namespace, plural: 'editorservers', name, body: [{ op: 'add', path: '/status', value: status }] },
    setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
  );
}

/**
 * Takes the controller's finalizer off every EditorServer object left in the namespace, once no
 * controller runs there any more: without it the namespace could not be deleted.
 */
export async function releaseEditorServers(cluster: TestCluster, namespace: string): Promise<void> {
  const names = (await kubectl(cluster, ['get', 'editorservers', '-n', namespace, '-o', 'name']).catch(() => '')).split('\n').filter(Boolean);
  for (const name of names) await kubectl(cluster, ['patch', name, '-n', namespace, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}']).catch(() => undefined);
}
