// The test cluster's own tooling against the running cluster: its volume provisioner
// (scripts/test-cluster-provisioner.mjs) and the fault helpers of test/helpers/cluster.ts.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getObject,
  killComponent,
  killEditorContainer,
  kubectl,
  NO_CLUSTER,
  startComponent,
  strangerPod,
  testCluster,
  type TestCluster,
} from '../helpers/cluster.ts';
import { eventually } from '../helpers/wait.ts';

const cluster = await testCluster();

describe.skipIf(!cluster)(cluster ? 'the Kubernetes test cluster' : NO_CLUSTER, () => {
  const c = cluster as TestCluster;
  const namespace = `tooling-${process.pid}`;

  beforeAll(async () => {
    await kubectl(c, ['create', 'namespace', namespace]);
    // Pods cannot be created in a namespace before its default service account exists.
    await eventually(() => getObject(c, ['serviceaccount', 'default', '-n', namespace]), 30_000, 200);
  });

  // Pods first: the namespace controller retries a namespace whose pods remain with a growing
  // backoff (tens of seconds). Pods whose containers lived through a kubelet restart were seen
  // to go only about a minute after the new kubelet started (at its first container clean-up).
  afterAll(async () => {
    // kubectl's own wait would outlast the helper's 60 s limit, so the wait is ours.
    await kubectl(c, ['delete', 'pods', '--all', '-n', namespace, '--wait=false']);
    const podsGone = async () => !((await getObject(c, ['pods', '-n', namespace]))?.items ?? []).length;
    try {
      await eventually(podsGone, 150_000, 500);
    } catch {
      // A kubelet that has not yet cleaned up after its restart: the objects go now, their
      // containers at its next clean-up.
      await kubectl(c, ['delete', 'pods', '--all', '-n', namespace, '--force', '--grace-period=0']);
    }
    await kubectl(c, ['delete', 'namespace', namespace, '--wait=true', '--timeout=60s']);
    // The namespace's claims went with it; their volumes go after them.
    await eventually(async () => !(await volumesOf(namespace)).length, 30_000, 200);
  }, 300_000);

  /** A claim that names no StorageClass, as the runtime's may when no class is configured. */
  async function createClaim(name: string, size = '16Mi'): Promise<void> {
    await apply({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
    });
  }

  async function boundVolume(claim: string): Promise<any> {
    const bound = await eventually(async () => {
      const pvc = await getObject(c, ['pvc', claim, '-n', namespace]);
      return pvc?.status?.phase === 'Bound' && pvc;
    }, 30_000, 200);
    return getObject(c, ['pv', bound.spec.volumeName]);
  }

  async function volumesOf(ns: string): Promise<any[]> {
    const list = await getObject(c, ['pv']);
    return (list?.items ?? []).filter((pv: any) => pv.spec.claimRef?.namespace === ns);
  }

  function apply(object: unknown): Promise<string> {
    return kubectl(c, ['apply', '-f', '-'], JSON.stringify(object));
  }

  /** A pod of the busybox image, not root, that runs `script` once with the claim at /data. */
  async function runOnce(name: string, claim: string, script: string): Promise<string> {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace },
      spec: {
        restartPolicy: 'Never',
        securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true },
        containers: [{
          name: 'main',
          image: 'devbox.local/busybox:1',
          imagePullPolicy: 'Never',
          command: ['sh', '-c', script],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
      },
    });
    const phase = await eventually(async () => {
      const pod = await getObject(c, ['pod', name, '-n', namespace]);
      return ['Succeeded', 'Failed'].includes(pod?.status?.phase) && pod.status.phase;
    }, 30_000, 200);
    const log = await kubectl(c, ['logs', name, '-n', namespace]);
    expect(phase, `pod ${name} failed: ${log}`).toBe('Succeeded');
    return log;
  }

  describe('its volume provisioner', () => {
    it('makes devbox-local the default StorageClass, with volumes deleted with their claims and bound at once', async () => {
      const sc = await getObject(c, ['storageclass', 'devbox-local']);
      expect(sc, 'no StorageClass devbox-local: is the provisioner running? (scripts/test-cluster.sh status)').toBeDefined();
      expect(sc.provisioner).toBe('devbox.dev/host-path');
      expect(sc.metadata.annotations['storageclass.kubernetes.io/is-default-class']).toBe('true');
      expect(sc.reclaimPolicy).toBe('Delete');
      expect(sc.volumeBindingMode).toBe('Immediate');
    });

    it('binds a claim that names no class to a new hostPath volume of its size, in a folder anyone can write', async () => {
      await createClaim('plain', '24Mi');
      const pvc = await getObject(c, ['pvc', 'plain', '-n', namespace]);
      expect(pvc.spec.storageClassName).toBe('devbox-local');

      const pv = await boundVolume('plain');
      expect(pv.metadata.name).toBe(`pvc-${pvc.metadata.uid}`);
      expect(pv.metadata.annotations['pv.kubernetes.io/provisioned-by']).toBe('devbox.dev/host-path');
      expect(pv.spec.capacity.storage).toBe('24Mi');
      expect(pv.spec.persistentVolumeReclaimPolicy).toBe('Delete');
      expect(pv.spec.claimRef).toMatchObject({ namespace, name: 'plain', uid: pvc.metadata.uid });
      const folder = join(c.runDir, 'volumes', pv.metadata.name);
      expect(pv.spec.hostPath.path).toBe(folder);
      expect(statSync(folder).mode & 0o777).toBe(0o777);
    });

    it('keeps what a non-root pod wrote on disk in the volume folder, across the pod\'s deletion, for the next pod', async () => {
      await createClaim('kept');
      const pv = await boundVolume('kept');
      const file = join(pv.spec.hostPath.path, 'notes', 'hello.txt');

      await runOnce('writer', 'kept', 'mkdir -p /data/notes && echo "written by $(id -u)" > /data/notes/hello.txt');
      expect(readFileSync(file, 'utf8')).toBe('written by 1000\n');
      expect(statSync(file).uid).toBe(1000);

      await kubectl(c, ['delete', 'pod', 'writer', '-n', namespace, '--wait=true']);
      expect(existsSync(file)).toBe(true);
      expect(await runOnce('reader', 'kept', 'cat /data/notes/hello.txt')).toBe('written by 1000');
      await kubectl(c, ['delete', 'pod', 'reader', '-n', namespace, '--wait=true']);
    });

    it('deletes the volume and its folder, with what was in it, once the claim is deleted', async () => {
      await createClaim('dropped');
      const pv = await boundVolume('dropped');
      const folder = pv.spec.hostPath.path;
      writeFileSync(join(folder, 'left-over.txt'), 'gone with the claim\n');

      await kubectl(c, ['delete', 'pvc', 'dropped', '-n', namespace, '--wait=true']);
      await eventually(async () => !(await getObject(c, ['pv', pv.metadata.name])), 30_000, 200);
      expect(existsSync(folder)).toBe(false);
    });
  });

  describe('its fault helpers', () => {
    it('makes a running pod that is not labelled as the controller\'s', async () => {
      const ref = await strangerPod(namespace);
      const pod = await getObject(c, ['pod', ref.name, '-n', namespace]);
      expect(pod.metadata.uid).toBe(ref.uid);
      expect(pod.status.phase).toBe('Running');
      expect(Object.keys(pod.metadata.labels ?? {}).filter((l) => /devbox|managed-by/.test(l))).toEqual([]);
    });

    it('kills a container with SIGKILL through containerd: it ends with 137', async () => {
      await apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'victim', namespace },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'editor', image: 'devbox.local/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
        },
      });
      const running = await eventually(async () => {
        const pod = await getObject(c, ['pod', 'victim', '-n', namespace]);
        return pod?.status?.containerStatuses?.[0]?.state?.running && pod;
      }, 30_000, 200);

      await killEditorContainer(running.status.containerStatuses[0].containerID);
      const terminated = await eventually(async () => {
        const pod = await getObject(c, ['pod', 'victim', '-n', namespace]);
        return pod?.status?.containerStatuses?.[0]?.state?.terminated;
      }, 30_000, 200);
      expect(terminated.exitCode).toBe(137);
    });

    // These two take the cluster down for a few seconds: others' tests see an outage, as they
    // would on a real cluster. Once each.
    it('kills the API server and starts it again with what was stored before, and the provisioner catches up', async () => {
      await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before', namespace }, data: { kept: 'yes' } });
      const readyz = () => kubectl(c, ['get', '--raw', '/readyz', '--request-timeout=2s']);

      const started = performance.now();
      await killComponent('kube-apiserver');
      await expect(readyz()).rejects.toThrow();
      await startComponent('kube-apiserver');
      expect(await readyz()).toBe('ok');
      expect(performance.now() - started).toBeLessThan(30_000);

      const kept = await getObject(c, ['configmap', 'before', '-n', namespace]);
      expect(kept.data).toEqual({ kept: 'yes' });
      // The provisioner's watches died with the API server: a claim made now binds only if it listed again.
      await createClaim('after-restart');
      await boundVolume('after-restart');
    }, 60_000);

    it('kills the kubelet and starts it again: the node is Ready and a pod\'s container lived through it', async () => {
      const ref = await strangerPod(namespace);
      const before = await getObject(c, ['pod', ref.name, '-n', namespace]);
      const healthz = () => fetch(`http://127.0.0.1:${process.env.DEVBOX_K8S_KUBELET_HEALTHZ_PORT ?? 10348}/healthz`).then((r) => r.text());

      const started = performance.now();
      await killComponent('kubelet');
      await expect(healthz()).rejects.toThrow();
      await startComponent('kubelet');
      expect(await healthz()).toBe('ok');
      expect(performance.now() - started).toBeLessThan(30_000);

      // The kubelet answers /healthz before it has posted the node's status again: Ready comes within seconds.
      const ready = async () => (await getObject(c, ['node'])).items[0].status.conditions.find((x: any) => x.type === 'Ready').status;
      expect(await eventually(async () => (await ready()) === 'True' && 'True', 30_000, 200)).toBe('True');
      const after = await getObject(c, ['pod', ref.name, '-n', namespace]);
      expect(after.status.containerStatuses[0]).toMatchObject({
        containerID: before.status.containerStatuses[0].containerID,
        restartCount: 0,
        ready: true,
      });
      // The API server reaches the new kubelet (exec goes through it) and the container is the same.
      expect(await kubectl(c, ['exec', ref.name, '-n', namespace, '--', 'cat', '/proc/1/cmdline'])).toBe('sleep\u00003600\u0000');
    }, 60_000);
  });
});
