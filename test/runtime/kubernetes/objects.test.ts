// The objects the Kubernetes runtime applies for a server, and how it reads a Pod's status:
// pure functions, checked without a cluster (the suite in test/kubernetes runs them on one).
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { Names } from '../../../src/runtime/kubernetes/names.ts';
import { mergeResources, ServerObjects } from '../../../src/runtime/kubernetes/objects.ts';
import type { KubernetesRuntimeOptions } from '../../../src/runtime/kubernetes/options.ts';
import { editorEnded, editorRun, exitOf, podProblem, restarted } from '../../../src/runtime/kubernetes/pod-state.ts';

const options: KubernetesRuntimeOptions = {
  namespace: 'team', image: 'example/code-server:1', imagePullPolicy: 'IfNotPresent', command: ['code-server'],
  storage: { size: '5Gi', storageClassName: 'fast' }, resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
  runAsUser: 1000, extraMounts: [], env: { TZ: 'UTC' }, namePrefix: 'devbox-',
};
const names = new Names('devbox-', 'team');
const objects = new ServerObjects(names, options);
const owner = { name: 'devbox-alpha', uid: 'anchor-uid' };

describe('the objects of a server', () => {
  it('are named for the server, labelled as this service\'s, and owned by its anchor', () => {
    const all = [objects.claim('alpha', owner), objects.service('alpha', owner, 8010), objects.statefulSet('alpha', owner, 1, 8010, undefined), objects.storagePod('alpha', owner)];
    for (const object of all) {
      expect(object.metadata.namespace).toBe('team');
      expect(object.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'devbox-controller', 'devbox.dev/server': 'alpha' });
      expect(object.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'devbox-alpha', uid: 'anchor-uid', blockOwnerDeletion: true }]);
    }
    expect(objects.anchor('alpha').metadata).not.toHaveProperty('ownerReferences');
    expect(all.map((o) => o.metadata.name)).toEqual(['devbox-alpha', 'devbox-alpha', 'devbox-alpha', 'devbox-alpha-storage']);
  });

  it('run the editor as non-root, without the cluster\'s credentials, once per Pod, on the server\'s port', () => {
    const set = objects.statefulSet('alpha', owner, 1, 8010, { limits: { memory: '4Gi' } }) as any;
    expect(set.spec.replicas).toBe(1);
    const pod = set.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 });
    const [editor] = pod.containers;
    expect(editor.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(editor.command.slice(0, 2)).toEqual(['sh', '-c']);
    expect(editor.command.slice(3)).toEqual(['code-server', 'code-server']);
    expect(editor.args).toContain('0.0.0.0:8010');
    expect(editor.readinessProbe.httpGet).toEqual({ path: '/healthz', port: 8010 });
    expect(editor.resources).toEqual({ requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '4Gi' } });
    expect(pod.volumes[0]).toEqual({ name: 'data', persistentVolumeClaim: { claimName: 'devbox-alpha' } });
    expect(objects.statefulSet('alpha', owner, 0, 8010, undefined)).toMatchObject({ spec: { replicas: 0 } });
    const labelled = objects.statefulSet('alpha', owner, 1, 8010, undefined, '5b0c6f1e-8a57-4d0e-9d3b-1f2e3d4c5b6a') as any;
    expect(labelled.metadata.labels['devbox.dev/uid']).toBe('5b0c6f1e-8a57-4d0e-9d3b-1f2e3d4c5b6a');
    expect(labelled.spec.template.metadata.labels['devbox.dev/uid']).toBe('5b0c6f1e-8a57-4d0e-9d3b-1f2e3d4c5b6a');
    expect(labelled.spec.selector.matchLabels, 'the selector, which cannot change, leaves the uid out').not.toHaveProperty('devbox.dev/uid');
    expect((objects.statefulSet('alpha', owner, 1, 8010, undefined, 'not a label value!') as any).metadata.labels).not.toHaveProperty('devbox.dev/uid');
  });

  it('ask for the volume in the configured size and class', () => {
    expect((objects.claim('alpha', owner) as any).spec).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } }, storageClassName: 'fast' });
  });

  it('lay a server\'s resources over the defaults, value by value', () => {
    expect(mergeResources({ requests: { cpu: '1' } }, { requests: { memory: '1Gi' } })).toEqual({ requests: { cpu: '1', memory: '1Gi' } });
    expect(mergeResources({}, undefined)).toEqual({});
  });

  it('keep long names within a label\'s 63 characters, apart by a hash of the whole name', () => {
    const long = 'a'.repeat(63);
    const other = `${'a'.repeat(62)}b`;
    expect(names.object(long).length).toBeLessThanOrEqual(45);
    expect(names.object(long)).not.toBe(names.object(other));
    expect(names.editorPod(long)).toBe(`${names.object(long)}-0`);
  });
});

describe('a reference', () => {
  it('names server alpha\'s editor only with this runtime\'s kind, namespace and Pod name', () => {
    const ref = { kind: 'kubernetes', namespace: 'team', pod: 'devbox-alpha-0', uid: 'u1' };
    expect(names.podOf('alpha', ref)).toEqual({ pod: 'devbox-alpha-0', uid: 'u1' });
    expect(names.podOf('beta', ref)).toBeUndefined();
    expect(names.podOf('alpha', { ...ref, namespace: 'other' })).toBeUndefined();
    expect(names.podOf('alpha', { ...ref, kind: 'process' })).toBeUndefined();
    expect(names.podOf('alpha', { ...ref, uid: '' })).toBeUndefined();
  });
});

const pod = (status: V1Pod['status'], extra: Partial<V1Pod> = {}): V1Pod => ({ metadata: { name: 'devbox-alpha-0', uid: 'u1' }, status, ...extra });

describe("a Pod's status, read", () => {
  it('says why it is not placed, in the scheduler\'s words', () => {
    expect(podProblem(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' }] })))
      .toEqual({ reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' });
  });

  it('tells a claim still being bound from a lack of room: a start waits for the volume instead of giving up', () => {
    const message = '0/1 nodes are available: 1 pod has unbound immediate PersistentVolumeClaims.';
    expect(podProblem(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }] })))
      .toEqual({ reason: 'WaitingForVolume', message });
  });

  it('says when the image cannot be had, and nothing while a container merely starts', () => {
    const waiting = (reason: string) => pod({ containerStatuses: [{ name: 'editor', ready: false, restartCount: 0, image: 'x', imageID: '', state: { waiting: { reason, message: 'm' } } }] });
    expect(podProblem(waiting('ImagePullBackOff'))).toEqual({ reason: 'ImagePullBackOff', message: 'm' });
    expect(podProblem(waiting('ContainerCreating'))).toBeUndefined();
  });

  it('reads how the editor ended: a signal from 128 + n, else the code, the kubelet\'s reason, and which container it was', () => {
    expect(exitOf(137)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(exitOf(1)).toEqual({ code: 1, signal: null });
    const crashed = pod({ containerStatuses: [{ name: 'editor', ready: false, restartCount: 0, image: 'x', imageID: '', containerID: 'containerd://c1', state: { terminated: { exitCode: 1, reason: 'Error', containerID: 'containerd://c1' } } }] });
    expect(editorEnded(crashed)).toEqual({ code: 1, signal: null, reason: 'Error', containerId: 'containerd://c1' });
    const ended = pod({ containerStatuses: [{ name: 'editor', ready: false, restartCount: 1, image: 'x', imageID: '', containerID: 'containerd://c2', state: { running: {} }, lastState: { terminated: { exitCode: 137, reason: 'OOMKilled', containerID: 'containerd://c1' } } }] });
    expect(editorEnded(ended)).toEqual({ code: null, signal: 'SIGKILL', reason: 'OOMKilled', containerId: 'containerd://c1' });
    expect(restarted(ended, 'containerd://c1')).toBe(true);
    expect(restarted(crashed, 'containerd://c1'), 'a report of the ended container itself proves nothing').toBe(false);
    // Restarted, with nothing left of how: the editor's one run is over all the same.
    const forgotten = pod({ containerStatuses: [{ name: 'editor', ready: false, restartCount: 1, image: 'x', imageID: '', state: { waiting: { reason: 'CrashLoopBackOff' } } }] });
    expect(editorEnded(forgotten)).toEqual({ code: null, signal: null, reason: undefined, containerId: undefined });
  });

  it('finds the log of the editor\'s own run: the current container\'s, then the previous one\'s, then none', () => {
    const status = (restartCount: number, state: object) => pod({ containerStatuses: [{ name: 'editor', ready: false, restartCount, image: 'x', imageID: '', state }] });
    expect(editorRun(status(0, { waiting: { reason: 'PodInitializing' } }))).toBeUndefined();
    expect(editorRun(status(0, { running: {} }))).toEqual({ previous: false, over: false });
    expect(editorRun(status(0, { terminated: { exitCode: 1 } }))).toEqual({ previous: false, over: true });
    expect(editorRun(status(1, { waiting: { reason: 'CrashLoopBackOff' } }))).toEqual({ previous: true, over: true });
    expect(editorRun(status(2, { running: {} })), 'the kubelet keeps two runs').toBeUndefined();
  });

  it("tells the editor's own exit from the run after it, which finds the editor already ran", () => {
    const status = (restartCount: number, last: number, current: number) => pod({ containerStatuses: [{
      name: 'editor', ready: false, restartCount, image: 'x', imageID: '',
      state: { terminated: { exitCode: current, containerID: 'containerd://c2' } },
      lastState: { terminated: { exitCode: last, containerID: 'containerd://c1' } },
    }] });
    // Seen only after the second run ended (the watch was away): still the first run's SIGKILL.
    expect(editorEnded(status(1, 137, 123))).toEqual({ code: null, signal: 'SIGKILL', reason: undefined, containerId: 'containerd://c1' });
    // After more runs than the kubelet keeps, how the editor ended is not known: never the later run's code.
    expect(editorEnded(status(3, 123, 123))).toEqual({ code: null, signal: null, reason: undefined, containerId: 'containerd://c1' });
  });
});
