// A controller that restarts (the service, and so its Kubernetes runtime, comes up again) finds
// the editors it left running on the test cluster and takes them over as they are: the same Pod,
// not restarted, not doubled. At the runtime's level; test/kubernetes end-to-end files do it
// through the whole service.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { httpHealth } from '../../src/runtime/health.ts';
import { KubernetesWorkload } from '../../src/runtime/kubernetes/runtime.ts';
import { getObject, NO_CLUSTER, strangerPod, testCluster } from '../helpers/cluster.ts';
import { runtimeOptions, stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually } from '../helpers/wait.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

let namespace: { name: string; remove(): Promise<void> };
const runtimes: KubernetesWorkload[] = [];

beforeAll(async () => {
  if (!cluster) return;
  namespace = await testNamespace(cluster, 'devbox-faults-restart');
});
afterAll(async () => {
  for (const runtime of runtimes) runtime.dispose();
  await namespace?.remove();
});

function newRuntime(): KubernetesWorkload {
  const runtime = new KubernetesWorkload(runtimeOptions(namespace.name, stubEditor(), cluster!));
  runtimes.push(runtime);
  return runtime;
}

/** The editor Pods of `server` in the namespace, as the API server has them. */
async function editorPods(server: string): Promise<any[]> {
  const list = await getObject(cluster!, ['pods', '-n', namespace.name, '-l', `devbox.dev/server=${server},devbox.dev/role=editor`]);
  return list?.items ?? [];
}

describe.skipIf(!cluster)(cluster ? 'a controller that restarts' : `a controller that restarts (${NO_CLUSTER})`, { timeout: 120_000 }, () => {
  it('adopts the editor Pod it left running: the same Pod, not restarted, not doubled, and a stranger\'s Pod left out', async () => {
    const first = newRuntime();
    await first.synced();
    const started = await first.start({ name: 'kept', port: 20_101 });
    const ready = await eventually(async () => {
      const [pod] = await editorPods('kept');
      return pod?.status?.containerStatuses?.[0]?.ready === true && pod;
    }, 60_000, 200);
    expect((await httpHealth.health(started.endpoint)).ok).toBe(true);
    const stranger = await strangerPod(namespace.name);
    const before = { uid: ready.metadata.uid, container: ready.status.containerStatuses[0], statefulSet: await getObject(cluster!, ['statefulset', 'devbox-kept', '-n', namespace.name]) };

    // The service goes (its runtime with it) and comes back: a new runtime, its first view.
    first.dispose();
    const began = Date.now();
    const second = newRuntime();
    await second.synced();
    const found = await second.list();
    console.log(`restarted runtime: first view in ${Date.now() - began} ms, ${found.length} editor(s) found`);
    expect(found).toEqual([{ name: 'kept', ref: started.ref, port: 20_101 }]);
    expect(found.some((editor) => (editor.ref as RuntimeRef & { pod?: string }).pod === stranger.name)).toBe(false);
    expect(second.state('kept', started.ref)).toMatchObject({ state: 'running', endpoint: started.endpoint });
    expect(second.adopt('kept', started.ref)).toEqual({ endpoint: started.endpoint });
    expect((await httpHealth.health(started.endpoint)).ok).toBe(true);
    // A start asked of it again (say, before the adoption was recorded) finds the same Pod.
    const again = await second.start({ name: 'kept', port: 20_101 });
    expect(again).toEqual(started);

    const pods = await editorPods('kept');
    expect(pods.map((p) => p.metadata.uid)).toEqual([before.uid]);
    const container = pods[0].status.containerStatuses[0];
    expect(container.restartCount).toBe(before.container.restartCount);
    expect(container.containerID).toBe(before.container.containerID);
    expect(container.state.running.startedAt).toBe(before.container.state.running.startedAt);
    const statefulSet = await getObject(cluster!, ['statefulset', 'devbox-kept', '-n', namespace.name]);
    expect(statefulSet.metadata.generation).toBe(before.statefulSet.metadata.generation);
    expect(statefulSet.spec.replicas).toBe(1);
    // The stranger's Pod is as it was.
    expect((await getObject(cluster!, ['pod', stranger.name, '-n', namespace.name]))?.metadata?.uid).toBe(stranger.uid);

    await second.stop('kept', started.ref, 1000);
    await eventually(async () => (await editorPods('kept')).length === 0, 60_000, 250);
  });
});
