// CRD mode through an API server outage: the API server is killed (SIGKILL) right after an
// EditorServer object changes, and more objects change right after it is back. The service's
// watch of the objects must miss none of it: every server ends as its object says, every object's
// status is the controller's for its latest generation, and no editor runs that no object wants.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { getObject, killComponent, kubectl, NO_CLUSTER, startComponent, testCluster } from '../helpers/cluster.ts';
import { closeClusterService, editorPod, objectsOf, readyPod, startClusterService } from '../helpers/cluster-service.ts';
import { editorServer, installCrd, releaseEditorServers } from '../helpers/crd.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

const POD_WAIT_MS = 90_000;

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let service: TestService;
const timings: Record<string, number> = {};

function manifest(name: string, running: boolean, displayName = name): string {
  return JSON.stringify({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec: { displayName, running } });
}

async function listed(name: string): Promise<any> {
  const list: any[] = (await service.request('GET', '/servers')).body;
  return list.find((s) => s.manifest === name);
}

beforeAll(async () => {
  if (!cluster) return;
  await installCrd(cluster);
  namespace = await testNamespace(cluster, 'devbox-faults-crd');
  ns = namespace.name;
  service = await startClusterService(cluster, ns, stubEditor(), { kubernetes: { source: 'crd' } });
  for (const name of ['alpha', 'beta', 'gamma']) await kubectl(cluster, ['apply', '-n', ns, '-f', '-'], manifest(name, true));
  for (const name of ['alpha', 'beta', 'gamma']) await eventually(() => readyPod(cluster, ns, name), POD_WAIT_MS, 200);

  // Right before the kill: alpha is asked to stop.
  await kubectl(cluster, ['patch', 'editorserver', 'alpha', '-n', ns, '--type', 'merge', '-p', '{"spec":{"running":false}}']);
  const killed = Date.now();
  await killComponent('kube-apiserver');
  await startComponent('kube-apiserver');
  timings.outage = Date.now() - killed;
  timings.back = Date.now();
  // Right after: beta deleted, gamma renamed, delta made.
  await kubectl(cluster, ['delete', 'editorserver', 'beta', '-n', ns, '--wait=false']);
  await kubectl(cluster, ['patch', 'editorserver', 'gamma', '-n', ns, '--type', 'merge', '-p', '{"spec":{"displayName":"Gamma after the outage"}}']);
  await kubectl(cluster, ['apply', '-n', ns, '-f', '-'], manifest('delta', true));
}, 300_000);

afterAll(async () => {
  // Whatever happened above, the shared cluster gets its API server back (nothing is done if it runs).
  if (cluster) await startComponent('kube-apiserver');
  if (service) await closeClusterService(service);
  if (cluster && ns) await releaseEditorServers(cluster, ns);
  await namespace?.remove();
}, 120_000);

describe.skipIf(!cluster)(cluster ? 'EditorServer objects through an API server outage' : `EditorServer objects through an API server outage (${NO_CLUSTER})`, { timeout: 180_000 }, () => {
  it('misses no change made right before the kill or right after: each server as its object says', async () => {
    onTestFailed(() => console.log(`the service's log:\n${service.lines.slice(-60).join('\n')}`));
    console.log(`API server outage: ${timings.outage} ms (kill to ready)`);

    // alpha: stopped (asked right before the kill), its Pod gone, its object's status Stopped for its generation.
    await eventually(async () => ((await editorPod(cluster!, ns, 'alpha')) === undefined ? true : undefined), POD_WAIT_MS, 250);
    await eventually(async () => {
      const object = await editorServer(cluster!, ns, 'alpha');
      return object.status?.phase === 'Stopped' && object.status.observedGeneration === object.metadata.generation ? object : undefined;
    }, POD_WAIT_MS, 250);
    expect((await listed('alpha')).status).toBe('stopped');

    // beta: deleted after the restart: gone from the API, its object released, none of its objects left.
    await eventually(async () => ((await listed('beta')) === undefined ? true : undefined), POD_WAIT_MS, 250);
    await eventually(async () => ((await editorServer(cluster!, ns, 'beta')) === undefined ? true : undefined), POD_WAIT_MS, 250);
    await eventually(async () => ((await objectsOf(cluster!, ns, 'beta')).length === 0 ? true : undefined), POD_WAIT_MS, 250);

    // gamma: renamed after the restart; its editor kept running, never restarted.
    const gamma = await eventually(async () => {
      const found = await listed('gamma');
      return found?.name === 'Gamma after the outage' ? found : undefined;
    }, 30_000, 250);
    expect(gamma.status).toBe('running');
    const gammaPod = await readyPod(cluster!, ns, 'gamma');
    expect(gammaPod.status.containerStatuses[0].restartCount).toBe(0);

    // delta: made after the restart, running.
    await eventually(async () => ((await listed('delta'))?.status === 'running' ? true : undefined), POD_WAIT_MS, 250);
    console.log(`every change carried out ${Date.now() - timings.back} ms after the API server was back`);

    // Every editor Pod left is wanted by an object.
    const pods = (await getObject(cluster!, ['pods', '-n', ns, '-l', 'devbox.dev/role=editor']))?.items ?? [];
    expect(pods.filter((p: any) => !p.metadata.deletionTimestamp).map((p: any) => p.metadata.name).sort()).toEqual(['devbox-delta-0', 'devbox-gamma-0']);
  });
});
