// The node's kubelet stops (SIGKILL) under a running editor, through the whole service on the
// test cluster: once the cluster gives the node up (the controller-manager's grace period, 16 s
// on the test cluster) the server is Failed with NodeNotReady; when the kubelet is back, the same
// editor is Running again, neither restarted nor replaced. The editor's container runs throughout:
// only the node's word about it stops. The kubelet's outage is kept under 30 s (other files share
// the node).
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { getObject, killComponent, NO_CLUSTER, startComponent, testCluster } from '../helpers/cluster.ts';
import { podRunsAnything, stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { createAndStart, serverRecord, startServiceOnCluster } from '../helpers/kube-service.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

let namespace: { name: string; remove(): Promise<void> };
let service: TestService;

beforeAll(async () => {
  if (!cluster) return;
  namespace = await testNamespace(cluster, 'devbox-faults-node');
  service = await startServiceOnCluster(cluster, namespace.name, stubEditor());
});
afterAll(async () => {
  // Whatever happened above, the shared node gets its kubelet back (nothing is done if it runs).
  if (cluster) await startComponent('kubelet');
  try {
    await service?.stop();
  } finally {
    await namespace?.remove();
  }
});

describe.skipIf(!cluster)(cluster ? 'a node whose kubelet stops' : `a node whose kubelet stops (${NO_CLUSTER})`, { timeout: 180_000 }, () => {
  it('makes the running server Failed with NodeNotReady, and the same editor Running again when the kubelet is back', async () => {
    // What the service said, for whoever reads a failure.
    onTestFailed(() => console.log(`the service's log:\n${service.lines.slice(-40).join('\n')}`));
    const { id, started } = await createAndStart(service, 'Steady');
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const before = await eventually(async () => {
      const found = await serverRecord(service, id);
      return found.phase === 'Running' && found;
    }, 60_000, 200);
    // Ready in the API too: a Pod whose readiness the kubelet never reported is one the node
    // controller finds not Ready already, and leaves as it is (the editor serves on, Running).
    const podBefore = await eventually(async () => {
      const pod = await getObject(cluster!, ['pod', 'devbox-steady-0', '-n', namespace.name]);
      return pod?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') && pod;
    }, 30_000, 200);
    const containerBefore = podBefore.status.containerStatuses[0];

    const killed = Date.now();
    await killComponent('kubelet');
    let lost: Record<string, any>;
    let podLost: any;
    let said = 0;
    try {
      lost = await eventually(async () => {
        const found = await serverRecord(service, id);
        return found.reason === 'NodeNotReady' && found;
      }, 25_000, 200);
      said = Date.now();
      // What the cluster says meanwhile: the Pod as the node controller left it.
      podLost = await getObject(cluster!, ['pod', 'devbox-steady-0', '-n', namespace.name]);
    } finally {
      // Back as soon as the status has said it (or the wait gave up): the outage stays short.
      await startComponent('kubelet');
    }
    const back = Date.now();
    console.log(`kubelet killed: NodeNotReady in the server's status after ${said - killed} ms; kubelet ready again after ${back - killed} ms`);
    console.log(`the Pod meanwhile: conditions ${JSON.stringify(podLost.status.conditions)}, editor ready ${podLost.status.containerStatuses[0].ready}`);
    expect(lost).toMatchObject({ status: 'failed', phase: 'Failed' });
    expect(lost.message).toMatch(/^node devbox-node is not ready/);
    // The editor ran on: its container, the same Pod, the same start.
    expect(await podRunsAnything(cluster!, podBefore.metadata.uid)).toBe(true);
    expect(podLost.metadata.uid).toBe(podBefore.metadata.uid);
    expect(lost.start_time).toBe(before.start_time);

    const running = await eventually(async () => {
      const found = await serverRecord(service, id);
      return found.phase === 'Running' && found;
    }, 60_000, 200);
    console.log(`kubelet back: Running again ${Date.now() - back} ms after it was ready`);
    expect(running).toMatchObject({ status: 'running', reason: null, start_time: before.start_time });
    // The kubelet probes the editor afresh: the Pod is Ready again a probe or two later.
    const podAfter = await eventually(async () => {
      const pod = await getObject(cluster!, ['pod', 'devbox-steady-0', '-n', namespace.name]);
      return pod?.status?.containerStatuses?.[0]?.ready === true && pod;
    }, 30_000, 200);
    expect(podAfter.metadata.uid).toBe(podBefore.metadata.uid);
    expect(podAfter.status.containerStatuses[0]).toMatchObject({ containerID: containerBefore.containerID, restartCount: containerBefore.restartCount });
    expect((await serverRecord(service, id)).phase).toBe('Running');
    const events = (await service.request('GET', `/servers/${id}/events`)).body.data.events as Array<{ reason: string; message: string }>;
    console.log(JSON.stringify(events.filter((e) => /NodeNotReady|Ready/.test(`${e.reason} ${e.message}`)).map((e) => `${e.reason}: ${e.message}`)));
  });
});
