// The whole service with `runtime.kind: kubernetes` on the test cluster (test/helpers/cluster.ts),
// and what the end-to-end tests read back from the cluster: a server's objects, its editor Pod,
// the host folder of its volume.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { getObject, kubectl, type TestCluster } from './cluster.ts';
import type { TestService } from './service.ts';

/**
 * Starts the service on the cluster, its editors' Pods in `namespace` running `editor` (stubEditor()
 * or realEditor()); `root` in the overrides reuses a service's folders (a restart).
 */
export { startServiceOnCluster as startClusterService } from './kube-service.ts';

/** The server's objects left in the namespace, as `Kind name` (those labelled devbox.dev/server=<name>). */
export async function objectsOf(cluster: TestCluster, namespace: string, name: string): Promise<string[]> {
  const found = await getObject<{ items: Array<{ kind: string; metadata: { name: string } }> }>(cluster, ['configmaps,pvc,services,statefulsets,pods', '-n', namespace, '-l', `devbox.dev/server=${name}`]);
  return (found?.items ?? []).map((item) => `${item.kind} ${item.metadata.name}`);
}

/** The server's editor Pod (`devbox-<name>-0`), or undefined. */
export function editorPod(cluster: TestCluster, namespace: string, name: string): Promise<any> {
  return getObject(cluster, ['pod', `devbox-${name}-0`, '-n', namespace]);
}

/** The Pod's editor container status. */
export function editorContainer(pod: any): any {
  return pod?.status?.containerStatuses?.find((c: { name: string }) => c.name === 'editor');
}

/** The server's editor Pod once its editor container runs and it is Ready. */
export async function readyPod(cluster: TestCluster, namespace: string, name: string): Promise<any> {
  const pod = await editorPod(cluster, namespace, name);
  return pod && !pod.metadata.deletionTimestamp && editorContainer(pod)?.ready === true ? pod : undefined;
}

/** The claim of the server's volume and the host folder of its volume (the provisioner's hostPath). */
export async function volumeOf(cluster: TestCluster, namespace: string, name: string): Promise<{ claimUid: string; pv: string; folder: string } | undefined> {
  const claim = await getObject(cluster, ['pvc', `devbox-${name}`, '-n', namespace]);
  if (!claim?.spec?.volumeName) return undefined;
  const volume = await getObject(cluster, ['pv', claim.spec.volumeName]);
  const folder = volume?.spec?.hostPath?.path;
  return folder ? { claimUid: claim.metadata.uid, pv: claim.spec.volumeName, folder } : undefined;
}

/** A file of the server's workspace, read from its volume's host folder. */
export async function workspaceFile(cluster: TestCluster, namespace: string, name: string, path: string): Promise<string | undefined> {
  const volume = await volumeOf(cluster, namespace, name);
  return volume ? fs.readFile(join(volume.folder, 'workspace', path), 'utf8').catch(() => undefined) : undefined;
}

/** Runs a shell command in the server's editor container. */
export function execInEditor(cluster: TestCluster, namespace: string, name: string, script: string): Promise<string> {
  return kubectl(cluster, ['exec', '-n', namespace, `devbox-${name}-0`, '-c', 'editor', '--', 'sh', '-c', script]);
}

/**
 * Ends a test's service without stopping its editors (each stop waits out a Pod's deletion) and
 * removes its folders: the test's namespace, deleted after it, takes the Pods with it.
 */
export async function closeClusterService(service: TestService): Promise<void> {
  await service.close();
  await fs.rm(service.root, { recursive: true, force: true });
}
