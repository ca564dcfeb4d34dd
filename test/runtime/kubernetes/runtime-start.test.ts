// The Kubernetes runtime's start over an in-memory cluster (test/helpers/fake-cluster.ts): what
// it makes for a server and when, the Pod its StatefulSet gets, a start the scheduler cannot
// place, and storage left alone while no editor runs. The same runtime against a real cluster:
// test/kubernetes/kubernetes-runtime.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { EditorNotPlaced } from '../../../src/runtime/interface.ts';
import type { KubernetesWorkload } from '../../../src/runtime/kubernetes/runtime.ts';
import { FakeCluster, runtimeOn } from '../../helpers/fake-cluster.ts';
import { eventually } from '../../helpers/wait.ts';

let runtime: KubernetesWorkload<FakeCluster> | undefined;
afterEach(() => runtime?.dispose());

/** The server's editor Pod once its StatefulSet has made it. */
const madePod = (cluster: FakeCluster, name: string) => eventually(() => cluster.pod(`devbox-${name}-0`));

describe('a start on the cluster', () => {
  it('makes nothing for a server that was only declared, however often its storage is looked at', async () => {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    expect(await runtime.storage.prepare('alpha')).toBe('/data/workspace');
    expect(runtime.storage.storageDeferred('alpha')).toBe(true);
    expect(await runtime.storage.workspaceEmpty('alpha')).toBe(true);
    expect(await runtime.storage.installedExtensions('alpha')).toEqual(new Map());
    expect(cluster.callsOf('apply')).toEqual([]);
    expect(cluster.callsOf('exec')).toEqual([]);
  });

  it("makes the server's anchor, claim, Service and StatefulSet, and answers once its Pod's editor runs, with the Pod as its reference", async () => {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    const starting = runtime.start({ name: 'alpha', port: 8123, uid: 'c0ffee00-1111-2222-3333-444455556666', resources: { limits: { memory: '4Gi' } } });
    const pod = await madePod(cluster, 'alpha');
    expect(cluster.callsOf('apply')).toEqual(['ConfigMap/devbox-alpha', 'PersistentVolumeClaim/devbox-alpha', 'Service/devbox-alpha', 'StatefulSet/devbox-alpha']);
    expect(cluster.object<any>('StatefulSet', 'devbox-alpha').spec.replicas).toBe(1);

    // The Pod as the StatefulSet made it from the runtime's template.
    expect(pod.metadata!.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'devbox-controller', 'devbox.dev/server': 'alpha', 'devbox.dev/role': 'editor',
      'devbox.dev/uid': 'c0ffee00-1111-2222-3333-444455556666',
    });
    const editor = pod.spec!.containers.find((c) => c.name === 'editor')!;
    expect(editor.ports).toEqual([{ name: 'http', containerPort: 8123, protocol: 'TCP' }]);
    expect(editor.args).toContain('0.0.0.0:8123');
    expect(editor.resources, "the server's limit over the config's defaults").toEqual({ requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '4Gi' } });
    expect(pod.spec!.initContainers!.map((c) => c.name)).toEqual(['prepare']);

    // Placed and preparing its volume: still starting.
    cluster.schedule(pod.metadata!.name!);
    cluster.runEditor(pod.metadata!.name!, { ready: false });
    const started = await starting;
    const ip = cluster.pod('devbox-alpha-0')!.status!.podIP!;
    expect(started).toEqual({ ref: { kind: 'kubernetes', namespace: 'team', pod: 'devbox-alpha-0', uid: pod.metadata!.uid }, endpoint: { host: ip, port: 8123 } });
    expect(runtime.state('alpha', started.ref)).toEqual({ state: 'running', endpoint: { host: ip, port: 8123 } });
    expect(await runtime.list()).toEqual([{ name: 'alpha', ref: started.ref, port: 8123 }]);
  });

  it('throws EditorNotPlaced with the scheduler\'s words when the Pod cannot be placed, and the start stands', async () => {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    const starting = runtime.start({ name: 'big', port: 8124 });
    const pod = await madePod(cluster, 'big');
    cluster.unschedulable(pod.metadata!.name!, '0/3 nodes are available: 3 Insufficient memory.');
    const refused = await starting.catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EditorNotPlaced);
    expect((refused as EditorNotPlaced).problem).toEqual({ reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient memory.' });
    const [standing] = await runtime.list();
    expect(standing).toMatchObject({ name: 'big', port: 8124, ref: { pod: 'devbox-big-0', uid: pod.metadata!.uid } });
    expect(runtime.state('big', standing.ref)).toMatchObject({ state: 'starting', problem: { reason: 'Unschedulable' } });
  });

  it('reaches the storage of a stopped server through a helper Pod that mounts its volume, and ends it as the editor starts', async () => {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    cluster.execHandler = (pod, container, command) => ({ code: 0, stdout: Buffer.from(`${pod}/${container}: ${command.at(-1)}`), stderr: '' });
    const run = async () => {
      const starting = runtime!.start({ name: 'alpha', port: 8126 });
      cluster.runEditor((await madePod(cluster, 'alpha')).metadata!.name!);
      return starting;
    };
    const first = await run();
    await runtime.stop('alpha', first.ref, 1000);
    await eventually(() => cluster.pod('devbox-alpha-0') === undefined);

    const reading = runtime.storage.readSettings('alpha');
    const helper = await eventually(() => cluster.pod('devbox-alpha-storage'));
    expect(helper.metadata!.labels).toMatchObject({ 'devbox.dev/server': 'alpha', 'devbox.dev/role': 'storage' });
    expect(helper.spec!.volumes![0]).toEqual({ name: 'data', persistentVolumeClaim: { claimName: 'devbox-alpha' } });
    cluster.updatePod('devbox-alpha-storage', (pod) => (pod.status = { phase: 'Running', podIP: '10.0.0.99' }));
    expect(await reading).toMatch(/^devbox-alpha-storage\/storage: /);

    // One Pod on the volume at a time: the start ends the helper, and storage goes through the editor again.
    await run();
    expect(cluster.pod('devbox-alpha-storage')).toBeUndefined();
    expect(cluster.callsOf('delete', 'Pod')).toEqual(['Pod/devbox-alpha-0', 'Pod/devbox-alpha-storage']);
    expect(await runtime.storage.readSettings('alpha')).toMatch(/^devbox-alpha-0\/editor: /);
  });

  it('defers storage while no editor runs: before the start, while the Pod is pending, and once its editor ended', async () => {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    expect(runtime.storage.storageDeferred('alpha')).toBe(true);
    const starting = runtime.start({ name: 'alpha', port: 8125 });
    const pod = (await madePod(cluster, 'alpha')).metadata!.name!;
    cluster.schedule(pod);
    expect(runtime.storage.storageDeferred('alpha'), 'placed, its volume being prepared').toBe(true);
    cluster.runEditor(pod);
    await starting;
    expect(runtime.storage.storageDeferred('alpha')).toBe(false);

    // Reached through the running editor: an exec into its container, never a helper Pod.
    cluster.execHandler = (_pod, _container, command) => ({ code: 0, stdout: Buffer.from(command.join(' ').includes('settings.json') ? '{"a":1}' : ''), stderr: '' });
    expect(await runtime.storage.readSettings('alpha')).toBe('{"a":1}');
    expect(cluster.callsOf('exec')).toEqual(['Pod/devbox-alpha-0']);
    expect(cluster.names('Pod')).toEqual(['devbox-alpha-0']);

    cluster.endEditor(pod, 1);
    await eventually(() => runtime!.storage.storageDeferred('alpha'));
  });
});
