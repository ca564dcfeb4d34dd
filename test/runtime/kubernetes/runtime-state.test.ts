// What the Kubernetes runtime says of an editor across its Pod's life, over an in-memory cluster
// (test/helpers/fake-cluster.ts): starting, running, a problem the cluster reports, an exit with
// the container's code and the kubelet's reason (a crash at start included, as the process
// runtime reports one), references that are not the server's, and a restarted runtime's view.
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeRef, StartedEditor } from '../../../src/runtime/interface.ts';
import type { KubernetesWorkload } from '../../../src/runtime/kubernetes/runtime.ts';
import { FakeCluster, runtimeOn } from '../../helpers/fake-cluster.ts';
import { eventually, nextCall } from '../../helpers/wait.ts';

const runtimes: Array<KubernetesWorkload<FakeCluster>> = [];
afterEach(() => {
  for (const runtime of runtimes.splice(0)) runtime.dispose();
});

async function newRuntime(cluster: FakeCluster, log?: string[]): Promise<KubernetesWorkload<FakeCluster>> {
  const runtime = await runtimeOn(cluster, log);
  runtimes.push(runtime);
  return runtime;
}

/** Starts server `name`'s editor and lets the cluster run it; resolves with what start() answered. */
async function running(cluster: FakeCluster, runtime: KubernetesWorkload<FakeCluster>, name: string, port = 8200): Promise<StartedEditor> {
  const starting = runtime.start({ name, port });
  const pod = await eventually(() => cluster.pod(`devbox-${name}-0`));
  cluster.runEditor(pod.metadata!.name!);
  return starting;
}

/** Resolves at the runtime's next word that server `name` changed. */
const changeOf = (runtime: KubernetesWorkload<FakeCluster>, name: string) => nextCall<[string]>((listener) => {
  let on = true;
  runtime.onChange((changed) => on && listener(changed));
  return () => (on = false);
}, (changed) => changed === name);

/** The state once its exit is known. */
const exitedState = (runtime: KubernetesWorkload<FakeCluster>, name: string, ref: RuntimeRef) => eventually(() => {
  const state = runtime.state(name, ref);
  return state.state === 'exited' && state.exit !== undefined && state;
});

describe("an editor's state, from the runtime's view of its Pod", () => {
  it('is starting while its Pod is pending or its volume prepared, with the cluster\'s problem when there is one, then running', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const starting = runtime.start({ name: 'alpha', port: 8201 });
    const pod = await eventually(() => cluster.pod('devbox-alpha-0'));
    const ref = { kind: 'kubernetes', namespace: 'team', pod: 'devbox-alpha-0', uid: pod.metadata!.uid! };
    expect(runtime.state('alpha', ref)).toEqual({ state: 'starting', endpoint: undefined });
    cluster.schedule('devbox-alpha-0');
    const endpoint = { host: cluster.pod('devbox-alpha-0')!.status!.podIP!, port: 8201 };
    await eventually(() => runtime.state('alpha', ref).state === 'starting' && (runtime.state('alpha', ref) as { endpoint?: unknown }).endpoint);
    cluster.waiting('devbox-alpha-0', 'ImagePullBackOff', 'Back-off pulling image "example/code-server:1"');
    const stuck = await starting;
    expect(stuck).toEqual({ ref, endpoint });
    expect(runtime.state('alpha', ref)).toEqual({ state: 'starting', endpoint, problem: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "example/code-server:1"' } });

    cluster.runEditor('devbox-alpha-0');
    await eventually(() => runtime.state('alpha', ref).state === 'running');
    expect(runtime.state('alpha', ref)).toEqual({ state: 'running', endpoint });
    expect(runtime.adopt('alpha', ref)).toEqual({ endpoint });
  });

  it('is exited with the exit code and the kubelet\'s reason when the editor crashes, and its StatefulSet and Pod go', async () => {
    const cluster = new FakeCluster();
    const log: string[] = [];
    const runtime = await newRuntime(cluster, log);
    const started = await running(cluster, runtime, 'alpha');
    const changed = changeOf(runtime, 'alpha');
    cluster.endEditor('devbox-alpha-0', 1);
    expect(await changed).toEqual(['alpha']);
    expect(runtime.state('alpha', started.ref), 'known at once, as a process\'s exit').toEqual({ state: 'exited', exit: { code: 1, signal: null }, reason: 'Error' });
    // The kubelet starts the container again; it finds the editor already ran and ends.
    cluster.restartEditor('devbox-alpha-0');
    cluster.endEditor('devbox-alpha-0', 123);
    await eventually(() => cluster.pod('devbox-alpha-0') === undefined);
    expect(cluster.object<any>('StatefulSet', 'devbox-alpha').spec.replicas).toBe(0);
    expect(runtime.state('alpha', started.ref), 'the same once its Pod is gone').toEqual({ state: 'exited', exit: { code: 1, signal: null }, reason: 'Error' });
    expect(await runtime.list()).toEqual([]);
    expect(runtime.adopt('alpha', started.ref)).toBeUndefined();
    expect(log).toContain('info: the editor of alpha (Pod devbox-alpha-0) ended: exit code 1 (Error)');
  });

  it('reports an editor that exits with code 1 at its start: start() answers its reference, whose state says how it ended', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const starting = runtime.start({ name: 'alpha', port: 8202 });
    await eventually(() => cluster.pod('devbox-alpha-0'));
    // The runtime never sees it running: it ran, ended, was started again and ended, all before one report.
    cluster.runEditor('devbox-alpha-0');
    cluster.updatePod('devbox-alpha-0', (pod) => {
      const status = pod.status!.containerStatuses![0];
      status.lastState = { terminated: { exitCode: 1, reason: 'Error', containerID: status.containerID } };
      status.restartCount = 1;
      status.containerID = 'containerd://second';
      status.state = { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container' } };
    });
    const started = await starting;
    expect(started.ref).toMatchObject({ pod: 'devbox-alpha-0' });
    expect(await exitedState(runtime, 'alpha', started.ref)).toEqual({ state: 'exited', exit: { code: 1, signal: null }, reason: 'Error' });
  });

  it('answers the start with the crashed editor\'s reference even when its Pod is gone before the start looks again', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    // The cluster runs ahead of the start: the Pod runs, crashes and is cleaned up in one go.
    const starting = runtime.start({ name: 'alpha', port: 8203 });
    const pod = await eventually(() => cluster.pod('devbox-alpha-0'));
    cluster.runEditor('devbox-alpha-0');
    cluster.updatePod('devbox-alpha-0', (p) => {
      const status = p.status!.containerStatuses![0];
      status.state = { terminated: { exitCode: 1, reason: 'Error', containerID: status.containerID } };
    });
    cluster.restartEditor('devbox-alpha-0');
    await eventually(() => cluster.pod('devbox-alpha-0') === undefined);
    const started = await starting;
    expect(started.ref).toMatchObject({ pod: 'devbox-alpha-0', uid: pod.metadata!.uid });
    expect(runtime.state('alpha', started.ref)).toEqual({ state: 'exited', exit: { code: 1, signal: null }, reason: 'Error' });
  });

  it('is exited with the signal when the editor is killed (the OOM killer: 137, OOMKilled)', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const started = await running(cluster, runtime, 'alpha');
    cluster.endEditor('devbox-alpha-0', 137, 'OOMKilled');
    expect(await exitedState(runtime, 'alpha', started.ref)).toEqual({ state: 'exited', exit: { code: null, signal: 'SIGKILL' }, reason: 'OOMKilled' });
  });

  it('is exited, and not a crash, when its own stop ended it; a start after waits for nothing of it', async () => {
    const cluster = new FakeCluster();
    cluster.holdDeletions = true;
    const runtime = await newRuntime(cluster);
    const started = await running(cluster, runtime, 'alpha');
    expect(await runtime.stop('alpha', started.ref, 2000)).toBe(true);
    expect(cluster.callsOf('delete', 'Pod')).toEqual(['Pod/devbox-alpha-0']);
    expect(runtime.state('alpha', started.ref)).toEqual({ state: 'exited', exit: undefined });
    cluster.endEditor('devbox-alpha-0', 0);
    await eventually(() => runtime.state('alpha', started.ref).state === 'exited' && (runtime.state('alpha', started.ref) as { exit?: unknown }).exit);
    expect(runtime.state('alpha', started.ref)).toEqual({ state: 'exited', exit: { code: 0, signal: null }, reason: 'Completed' });
    cluster.finishDeletion('devbox-alpha-0');
    expect(await runtime.list()).toEqual([]);
  });
});

describe('references that are not the server\'s editor', () => {
  it('are never running, adopted or stopped: a stranger\'s Pod of that name, another server\'s editor, a forged reference', async () => {
    const cluster = new FakeCluster();
    const runtime = await newRuntime(cluster);
    const alpha = await running(cluster, runtime, 'alpha');
    const stranger = cluster.putPod({ metadata: { name: 'devbox-beta-0', labels: { app: 'someone-else' } }, spec: { containers: [{ name: 'editor', image: 'x' }] } });
    const strangerRef = { kind: 'kubernetes', namespace: 'team', pod: 'devbox-beta-0', uid: stranger.metadata!.uid! };
    const forged = { kind: 'process', pid: 1, startTicks: 1 };
    await eventually(async () => (await runtime.list()).length === 1);
    const asked = cluster.calls.length;

    for (const runtimeNow of [runtime, await newRuntime(cluster)]) {
      // Not this service's Pod: outside its view, and never taken for a running editor.
      expect(['foreign', 'gone']).toContain(runtimeNow.state('beta', strangerRef).state);
      expect(runtimeNow.state('beta', alpha.ref)).toEqual({ state: 'foreign' });
      expect(runtimeNow.state('alpha', forged)).toEqual({ state: 'foreign' });
      expect(runtimeNow.adopt('beta', strangerRef)).toBeUndefined();
      expect(runtimeNow.adopt('beta', alpha.ref)).toBeUndefined();
      expect(await runtimeNow.stop('beta', strangerRef, 500)).toBe(false);
      expect(await runtimeNow.stop('beta', alpha.ref, 500)).toBe(false);
      expect(await runtimeNow.stop('alpha', forged, 500)).toBe(false);
    }
    // Nothing was deleted or scaled, and both Pods are as they were.
    expect(cluster.calls.slice(asked).filter((c) => c.verb === 'delete' || c.verb === 'scale' || c.verb === 'apply')).toEqual([]);
    expect(cluster.pod('devbox-beta-0')!.metadata!.uid).toBe(stranger.metadata!.uid);
    expect(cluster.pod('devbox-alpha-0')!.metadata!.uid).toBe(alpha.ref.uid);
  });
});

describe('a restarted runtime', () => {
  it('lists and adopts the editors left running, leaves out what is not one, and sees one that crashed meanwhile as exited', async () => {
    const cluster = new FakeCluster();
    const first = await newRuntime(cluster);
    const alpha = await running(cluster, first, 'alpha', 8301);
    const gamma = await running(cluster, first, 'gamma', 8303);
    cluster.putPod({ metadata: { name: 'stranger', labels: { 'devbox.dev/server': 'alpha' } }, spec: { containers: [{ name: 'editor', image: 'x' }] } });
    first.dispose();
    // While no runtime watched: gamma's editor crashed and its container was started again.
    cluster.endEditor('devbox-gamma-0', 2);
    cluster.restartEditor('devbox-gamma-0');

    const second = await newRuntime(cluster);
    expect(await second.list()).toEqual([{ name: 'alpha', ref: alpha.ref, port: 8301 }]);
    expect(second.adopt('alpha', alpha.ref)).toEqual({ endpoint: alpha.endpoint });
    expect(second.state('alpha', alpha.ref)).toEqual({ state: 'running', endpoint: alpha.endpoint });
    expect(second.state('gamma', gamma.ref)).toEqual({ state: 'exited', exit: { code: 2, signal: null }, reason: 'Error' });
    expect(second.adopt('gamma', gamma.ref)).toBeUndefined();
    // A start asked of it again finds the same Pod, and makes no second one.
    expect(await second.start({ name: 'alpha', port: 8301 })).toEqual(alpha);
    expect(cluster.names('Pod').filter((n) => n.startsWith('devbox-alpha'))).toEqual(['devbox-alpha-0']);
  });
});
