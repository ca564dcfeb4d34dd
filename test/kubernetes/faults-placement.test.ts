// Editors the cluster cannot run as asked, through the whole service on the test cluster: what the
// API says then is the cluster's own reason, within seconds, and the server gets going once the
// cause is gone. Nothing leaves the machine: the unpullable image names a loopback registry that
// refuses connections.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { serverRecord, startServiceOnCluster } from '../helpers/kube-service.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

/** An image no node has, on a registry that refuses connections (port 1 on loopback): a pull fails at once, and nothing is sent anywhere. */
const UNPULLABLE = '127.0.0.1:1/nothing:1';

describe.skipIf(!cluster)(cluster ? 'editors the cluster cannot run as asked' : `editors the cluster cannot run as asked (${NO_CLUSTER})`, { timeout: 180_000 }, () => {
  describe('an image the node cannot pull', () => {
    let namespace: { name: string; remove(): Promise<void> };
    let service: TestService;
    beforeAll(async () => {
      namespace = await testNamespace(cluster!, 'devbox-faults-image');
      service = await startServiceOnCluster(cluster!, namespace.name, stubEditor(), {
        config: { editor: { startTimeoutSeconds: 5 } },
        kubernetes: { image: UNPULLABLE, imagePullPolicy: 'IfNotPresent' },
      });
    });
    afterAll(async () => {
      try {
        await service?.stop();
      } finally {
        await namespace?.remove();
      }
    });

    it('shows the kubelet\'s pull error in the server\'s status within seconds of its start, not a hang', async () => {
      // Created stopped, it has nothing on the cluster yet: it says Stopped, and no Pod tries the image.
      const created = await service.request('POST', '/servers', { name: 'Unpullable', extensions: [] });
      expect(created.status).toBe(201);
      const { id } = created.body;
      expect(await serverRecord(service, id)).toMatchObject({ status: 'stopped', pid: null });
      const pullError = (found: Record<string, any> | undefined) => /^(ErrImagePull|ImagePullBackOff)$/.test(found?.reason ?? '');
      const asked = Date.now();
      const starting = service.request('POST', `/servers/${id}/start`);
      // The editor's Pod prepares its volume first, in a container of the same image: that pull fails.
      const record = await eventually(async () => {
        const found = await serverRecord(service, id);
        return pullError(found) && found.status === 'starting' && found;
      }, 30_000, 100);
      const seenStarting = Date.now() - asked;
      const started = await starting;
      console.log(`unpullable image: starting with ${record.reason} ${seenStarting} ms after the start was asked for, which answered ${started.status} after ${Date.now() - asked} ms: ${started.body.message}`);
      // Its Pod exists and waits for the image: Starting, with the kubelet's reason.
      expect(record).toMatchObject({ phase: 'Starting', pid: null });
      expect(record.message).toContain(UNPULLABLE);
      expect(seenStarting).toBeLessThan(15_000);
      // The API's wait (editor.startTimeoutSeconds, 5 s here) ends with the reason, not a hang.
      expect(started.status).toBe(202);
      expect(started.body.message).toMatch(/is still starting \((ErrImagePull|ImagePullBackOff): /);
    });
  });

  describe('more memory than the node has', () => {
    let namespace: { name: string; remove(): Promise<void> };
    let service: TestService;
    beforeAll(async () => {
      namespace = await testNamespace(cluster!, 'devbox-faults-memory');
      service = await startServiceOnCluster(cluster!, namespace.name, stubEditor(), { config: { editor: { startTimeoutSeconds: 5 } } });
    });
    afterAll(async () => {
      try {
        await service?.stop();
      } finally {
        await namespace?.remove();
      }
    });

    const manifest = (memory: string) => [
      'apiVersion: devbox.dev/v1alpha1',
      'kind: EditorServer',
      'metadata:',
      '  name: huge',
      'spec:',
      '  running: true',
      '  resources:',
      `    requests: { memory: ${memory} }`,
      '',
    ].join('\n');
    const huge = async () => ((await service.request('GET', '/servers')).body as Array<Record<string, any>>).find((s) => s.manifest === 'huge');

    it('is Pending with the scheduler\'s reason, and runs once the manifest asks for what fits', async () => {
      const began = Date.now();
      await fs.writeFile(join(service.settings.manifestsDir, 'huge.yaml'), manifest('10000Gi'));
      const pending = await eventually(async () => {
        const found = await huge();
        return found?.reason === 'Unschedulable' && found;
      }, 60_000, 200);
      console.log(`10000Gi of memory: Unschedulable in the status ${Date.now() - began} ms after the manifest was written: ${pending.message}`);
      expect(pending).toMatchObject({ phase: 'Pending', status: 'starting', pid: null });
      expect(pending.message).toMatch(/Insufficient memory/);
      // The request stands in the cluster: the Pod is there, Pending, not placed.
      const pod = await getObject(cluster!, ['pod', 'devbox-huge-0', '-n', namespace.name]);
      expect(pod?.status?.phase).toBe('Pending');
      expect(pod?.spec?.containers?.[0]?.resources?.requests?.memory).toBe('10000Gi');

      const fixed = Date.now();
      await fs.writeFile(join(service.settings.manifestsDir, 'huge.yaml'), manifest('64Mi'));
      const running = await eventually(async () => {
        const found = await huge();
        return found?.phase === 'Running' && found;
      }, 90_000, 250);
      console.log(`64Mi of memory: Running ${Date.now() - fixed} ms after the manifest was rewritten`);
      expect(running).toMatchObject({ status: 'running', reason: null });
      const placed = await getObject(cluster!, ['pod', 'devbox-huge-0', '-n', namespace.name]);
      expect(placed?.spec?.containers?.[0]?.resources?.requests?.memory).toBe('64Mi');
      expect(placed?.status?.phase).toBe('Running');
    });
  });
});
