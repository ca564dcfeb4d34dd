// The API server killed (SIGKILL) and started again on the test cluster, watched by two clients
// at once, so the shared cluster goes through one outage: the project's list-then-watch loop on
// ConfigMaps, and the whole service with its editors. Changes are made right before the kill,
// by the kubelet while the API server is down (a container killed), and right after the restart;
// both clients must end up with the truth, missing no change.
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { KubeClient } from '../../src/runtime/kubernetes/client.ts';
import { ListWatch, WatchFailure, type ListWatchTransport } from '../../src/runtime/kubernetes/list-watch.ts';
import { getObject, killComponent, killEditorContainer, kubectl, NO_CLUSTER, startComponent, testCluster } from '../helpers/cluster.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { createAndStart, serverRecord, startServiceOnCluster } from '../helpers/kube-service.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

const LABEL = 'devbox.dev/fault-test=watch';

let editors: { name: string; remove(): Promise<void> };
let objects: { name: string; remove(): Promise<void> };
let service: TestService;
let loop: ListWatch<V1ConfigMap>;
/** The loop's view: ConfigMap name → its data.value. */
const view = new Map<string, string>();
const troubles: Error[] = [];
/** What each watch the loop opened was resumed from, and how watches failed (at connect, or as an ERROR event). */
const resumedFrom: string[] = [];
const watchFailures: Array<{ status: number | undefined; message: string }> = [];
let held: { release(): void; waiting: boolean; from?: string } | undefined;
/** The loop's counts and version when it was held, before the outage. */
let countsBefore: { lists: number; watches: number };
let heldFrom: string | undefined;
const ids: Record<string, string> = {};
const podsBefore: Record<string, any> = {};
const timings: Record<string, number> = {};

/** The ConfigMaps of the test as the API server has them: name → data.value. */
async function truth(): Promise<Map<string, string>> {
  const list = await getObject(cluster!, ['configmaps', '-n', objects.name, '-l', LABEL]);
  return new Map((list?.items ?? []).map((c: V1ConfigMap) => [c.metadata!.name!, c.data?.value ?? '']));
}

async function putConfigMap(name: string, value: string): Promise<void> {
  await kubectl(cluster!, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: objects.name, labels: { 'devbox.dev/fault-test': 'watch' } }, data: { value },
  }));
}

function editorPod(name: string): Promise<any> {
  return getObject(cluster!, ['pod', `devbox-${name}-0`, '-n', editors.name]);
}

async function readyPod(name: string): Promise<any> {
  const pod = await editorPod(name);
  return pod?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True') && !pod.metadata.deletionTimestamp && pod;
}

beforeAll(async () => {
  if (!cluster) return;
  editors = await testNamespace(cluster, 'devbox-faults-api');
  objects = await testNamespace(cluster, 'devbox-faults-watch');

  // The service, with editors running: one the kubelet will see killed (OnFailure: restarted),
  // one to stop after the restart, one whose Pod someone deletes (Never: not restarted).
  service = await startServiceOnCluster(cluster, editors.name, stubEditor());
  for (const [name, policy] of [['alpha', 'OnFailure'], ['beta', 'Never'], ['gamma', 'Never']] as const) {
    const { id, started } = await createAndStart(service, name, { restart_policy: policy });
    if (started.status !== 200) throw new Error(`${name} did not start: ${JSON.stringify(started.body)}`);
    ids[name] = id;
  }
  for (const name of ['alpha', 'beta', 'gamma']) podsBefore[name] = await eventually(() => readyPod(name), 60_000, 200);

  // The loop, over the real API server, its transport able to hold it between two watches (as a
  // client paused, or cut off from the API server, would be).
  for (const name of ['one', 'two', 'three']) await putConfigMap(name, '1');
  const real = new KubeClient(objects.name, cluster.kubeconfig).transport<V1ConfigMap>('v1', 'ConfigMap', `/api/v1/namespaces/${objects.name}/configmaps`, LABEL);
  const transport: ListWatchTransport<V1ConfigMap> = {
    list: (signal) => real.list(signal),
    async watch(resourceVersion, onEvent, signal) {
      const hold = held;
      if (hold) {
        hold.waiting = true;
        hold.from = resourceVersion;
        await new Promise<void>((resolve) => (hold.release = resolve));
      }
      resumedFrom.push(resourceVersion);
      const seen: typeof onEvent = (event) => {
        if (event.type === 'ERROR') watchFailures.push({ status: event.object.code, message: event.object.message ?? '' });
        onEvent(event);
      };
      return real.watch(resourceVersion, seen, signal).catch((error: unknown) => {
        if (error instanceof WatchFailure) watchFailures.push({ status: error.status, message: error.message });
        throw error;
      });
    },
  };
  loop = new ListWatch<V1ConfigMap>(transport, {
    replace: (items) => {
      view.clear();
      for (const c of items) view.set(c.metadata!.name!, c.data?.value ?? '');
    },
    upsert: (c) => view.set(c.metadata!.name!, c.data?.value ?? ''),
    remove: (c) => view.delete(c.metadata!.name!),
    trouble: (error) => troubles.push(error),
  }, { relistMs: 10 * 60_000, backoff: { initialMs: 200, maxMs: 2000 } });
  loop.start();
  await loop.synced();
  await putConfigMap('three', '2');
  await eventually(() => view.get('three') === '2', 10_000, 50);
  // Held once its watch ends (the API server ends each within 20 s): it keeps the version it had.
  held = { release: () => undefined, waiting: false };
  await eventually(() => held!.waiting, 30_000, 100);
  countsBefore = { ...loop.counts };
  heldFrom = held.from;

  // Right before the kill: a ConfigMap changed, and someone deletes gamma's editor Pod (its
  // kubelet ends the container; the Pod goes from the API only once the kubelet can say so).
  await putConfigMap('two', '2');
  await kubectl(cluster, ['delete', 'pod', 'devbox-gamma-0', '-n', editors.name, '--wait=false']);
  const killed = Date.now();
  await killComponent('kube-apiserver');
  try {
    // While it is down: alpha's editor is killed, as the OOM killer would; only its kubelet knows.
    await killEditorContainer(podsBefore.alpha.status.containerStatuses[0].containerID);
  } finally {
    await startComponent('kube-apiserver');
  }
  timings.outage = Date.now() - killed;
  timings.back = Date.now();
  // Right after: ConfigMaps deleted and made, beta stopped and delta made and started.
  await kubectl(cluster, ['delete', 'configmap', 'one', '-n', objects.name]);
  await putConfigMap('four', '1');
  const stopped = await service.request('POST', `/servers/${ids.beta}/stop`);
  timings.betaStop = Date.now() - timings.back;
  if (stopped.status !== 200 && stopped.status !== 202) throw new Error(`beta's stop: ${stopped.status} ${JSON.stringify(stopped.body)}`);
  const delta = await createAndStart(service, 'delta');
  ids.delta = delta.id;
  held.release();
  held = undefined;
}, 240_000);

afterAll(async () => {
  // Whatever happened above, the shared cluster gets its API server back (nothing is done if it runs).
  if (cluster) await startComponent('kube-apiserver');
  await loop?.close();
  try {
    await service?.stop();
  } finally {
    await editors?.remove();
    await objects?.remove();
  }
});

describe.skipIf(!cluster)(cluster ? 'the API server killed and started again' : `the API server killed and started again (${NO_CLUSTER})`, { timeout: 120_000 }, () => {
  it('gives the watch resumed from before the restart 410, and the loop lists again at once: its view is the truth', async () => {
    console.log(`API server outage: ${timings.outage} ms (kill to ready)`);
    await eventually(async () => JSON.stringify([...view].sort()) === JSON.stringify([...(await truth())].sort()), 20_000, 100);
    expect(Object.fromEntries(view)).toEqual({ two: '2', three: '2', four: '1' });
    // The held watch was resumed from the version the loop had before the restart, and the
    // restarted API server (its watch cache begins at its start) said it is too old.
    expect(heldFrom).toBeDefined();
    expect(resumedFrom).toContain(heldFrom);
    console.log(`the watch resumed from ${heldFrom}: ${JSON.stringify(watchFailures)}`);
    expect(watchFailures.map((f) => f.status)).toContain(410);
    expect(watchFailures.find((f) => f.status === 410)?.message).toMatch(/too old resource version/);
    // One list more, at once: a 410 is no trouble to back off from.
    expect(loop.counts.lists).toBe(countsBefore.lists + 1);
    expect(troubles).toEqual([]);
  });

  it('lets the service\'s controller miss no change: each server as the cluster has it, and no editor of nobody\'s', async () => {
    onTestFailed(() => console.log(`the service's log:\n${service.lines.slice(-60).join('\n')}`));
    const status = (name: string) => service.index.serverNamed(name)?.status;
    // alpha: killed while the API server was down; OnFailure starts it again, a new Pod.
    const alpha = await eventually(async () => {
      const pod = await readyPod('alpha');
      const record = await serverRecord(service, ids.alpha);
      return pod && pod.metadata.uid !== podsBefore.alpha.metadata.uid && record.phase === 'Running' && status('alpha')?.runtimeRef?.uid === pod.metadata.uid && { pod, record };
    }, 90_000, 250);
    console.log(`alpha Running in a new Pod ${Date.now() - timings.back} ms after the API server was back`);
    const alphaEvents = (await service.request('GET', `/servers/${ids.alpha}/events`)).body.data.events as Array<{ message: string }>;
    expect(alphaEvents.map((e) => e.message).join('\n')).toMatch(/killed by SIGKILL/);
    expect(alpha.record.start_time).not.toBe(null);

    // beta: stopped through the API right after the restart (a stop the API answered 202 is
    // still under way: the kubelet may take a while to end the Pod).
    const beta = await eventually(async () => {
      const record = await serverRecord(service, ids.beta);
      return record.phase !== 'Stopping' && record;
    }, 60_000, 250);
    expect(beta).toMatchObject({ phase: 'Stopped', status: 'stopped' });
    await eventually(async () => (await editorPod('beta')) === undefined, 60_000, 250);

    // gamma: its Pod deleted by someone; Never: Failed, and no editor of it runs any more.
    const gamma = await eventually(async () => {
      const record = await serverRecord(service, ids.gamma);
      return record.phase === 'Failed' && record;
    }, 90_000, 250);
    console.log(`gamma Failed (${gamma.reason}: ${gamma.message}) ${Date.now() - timings.back} ms after the API server was back`);
    await eventually(async () => {
      const pod = await editorPod('gamma');
      return pod === undefined || pod.metadata.deletionTimestamp !== undefined;
    }, 60_000, 250);

    // delta: made and started right after the restart.
    const delta = await eventually(async () => {
      const pod = await readyPod('delta');
      const record = await serverRecord(service, ids.delta);
      return pod && record.phase === 'Running' && status('delta')?.runtimeRef?.uid === pod.metadata.uid && record;
    }, 90_000, 250);
    expect(delta.status).toBe('running');

    // Every editor Pod left is one a status names: nothing runs that nobody watches.
    const pods = (await getObject(cluster!, ['pods', '-n', editors.name, '-l', 'devbox.dev/role=editor']))?.items ?? [];
    const named = new Set(['alpha', 'beta', 'gamma', 'delta'].map((name) => status(name)?.runtimeRef?.uid).filter(Boolean));
    expect(pods.filter((p: any) => !p.metadata.deletionTimestamp).map((p: any) => `${p.metadata.name} ${named.has(p.metadata.uid) ? 'named' : 'nobody\'s'}`).sort())
      .toEqual(['devbox-alpha-0 named', 'devbox-delta-0 named']);
  });
});
