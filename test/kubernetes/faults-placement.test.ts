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

    it('shows the kubelet\'s pull error in the server\'s status within seconds, not a hang', async () => {
      const began = Date.now();
      const creating = service.request('POST', '/servers', { name: 'Unpullable', extensions: [] });
      const pullError = (found: Record<string, any> | undefined) => /^(ErrImagePull|ImagePullBackOff)$/.test(found?.reason ?? '');
      // Its storage is out of reach from the first: the Pod that mounts its volume needs the image
      // too. (The create answers once its wait for a settled status ends, 10 s.)
      const stopped = await eventually(async () => {
        const found = ((await service.request('GET', '/servers')).body as Array<Record<string, any>>).find((s) => s.name === 'Unpullable');
        return pullError(found) && found;
      }, 30_000, 100);
      const seen = Date.now() - began;
      const created = await creating;
      expect(created.status).toBe(201);
      const { id } = created.body;
      expect(stopped).toMatchObject({ status: 'stopped', phase: 'Pending', pid: null });
      const asked = Date.now();
      const starting = service.request('POST', `/servers/${id}/start`);
      const record = await eventually(async () => {
        const found = await serverRecord(service, id);
        return pullError(found) && found.status === 'starting' && found;
      }, 30_000, 100);
      const seenStarting = Date.now() - asked;
      const started = await starting;
      console.log(`unpullable image: ${stopped.reason} in the status ${seen} ms after the create; starting with ${record.reason} ${seenStarting} ms after the start was asked for, which answered ${started.status} after ${Date.now() - asked} ms: ${started.body.message}`);
      expect(record).toMatchObject({ phase: 'Pending', pid: null });
      expect(record.message).toContain(UNPULLABLE);
      expect(seen).toBeLessThan(15_000);
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
