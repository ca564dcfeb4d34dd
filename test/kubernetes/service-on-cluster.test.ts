// The whole service with `runtime.kind: kubernetes` on the real test cluster: servers made
// through the API and by manifest files become Pods on its kubelet, the proxy reaches them, their
// work lives on their volumes across stops, their logs come from the Pod log API, a restarted
// service adopts the editors that kept running, and deleting a server leaves nothing behind.
// The editor is the stub (test/fixtures/stub-editor.mjs) run from the host in the busybox image;
// code-server-on-cluster.test.ts runs the real one.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import {
  closeClusterService, editorContainer, editorPod, execInEditor, objectsOf, readyPod, startClusterService, volumeOf, workspaceFile,
} from '../helpers/cluster-service.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { opened } from '../helpers/net.ts';
import { documentSchemas, pointer } from '../helpers/openapi.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let service: TestService;

/** A stop→start waits for the old Pod's deletion (~10 s in Kubernetes 1.20): generous bounds. */
const POD_WAIT_MS = 60_000;
/** A stopped Pod's removal: usually 5–10 s, but 1.20's kubelet can leave one Terminating for a minute (see the delete below). */
const POD_GONE_MS = 150_000;
/** Started on this port, the stub editor says why on both streams and exits with code 1 (STUB_EXIT_ON_PORT). */
const EXITS_AT_START_PORT = 19_999;
/** The service's editors: the stub, told which port it fails on. */
const kubernetes = { env: { STUB_EXIT_ON_PORT: String(EXITS_AT_START_PORT) } };

beforeAll(async () => {
  if (!cluster) return;
  namespace = await testNamespace(cluster, 'devbox-e2e');
  ns = namespace.name;
  service = await startClusterService(cluster, ns, stubEditor(), {
    kubernetes,
    // A manifest file that goes stops its editor after this grace.
    config: { controller: { orphanGraceSeconds: 1 } },
  });
});
afterAll(async () => {
  if (service) await closeClusterService(service);
  await namespace?.remove();
});

/** The service's record of a server, by id (GET /servers/{id}). */
async function recordOf(id: string): Promise<any> {
  return (await service.request('GET', `/servers/${id}`)).body;
}

/** The server's list entry (GET /servers), by manifest name. */
async function listed(name: string): Promise<any> {
  const list: any[] = (await service.request('GET', '/servers')).body;
  return list.find((s) => s.manifest === name);
}

describe.skipIf(!cluster)(cluster ? 'the service on the test cluster' : `the service on the test cluster (${NO_CLUSTER})`, { timeout: 300_000 }, () => {
  // These two share nothing but the service: side by side, as their time is mostly the cluster's waits.
  describe.concurrent('servers from the API and from files', () => {
    it('runs a server created through the API as a Pod, serves it through the proxy, keeps its work across a stop and a start, and deletes every object of it', async ({ expect }) => {
      const created = await service.request('POST', '/servers', { name: 'Cluster one', extensions: [] });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const { id, port } = created.body;
      expect(created.body).toMatchObject({ name: 'Cluster one', status: 'stopped', pid: null, workspace_path: '/data/workspace' });

      const started = await service.request('POST', `/servers/${id}/start`);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      expect(started.body.data).toEqual({ id, status: 'running', pid: null });

      // A Pod on the kubelet, its editor serving on the server's route number.
      const pod = await eventually(() => readyPod(cluster!, ns, 'cluster-one'), POD_WAIT_MS, 200);
      expect(pod.spec.nodeName).toBe('devbox-node');
      expect(pod.status.podIP).toMatch(/^10\.233\.77\./);
      expect(pod.spec.containers[0].ports).toEqual([expect.objectContaining({ containerPort: port })]);

      // The records keep the shape the interface and the API document give them.
      const list = await service.request('GET', '/servers');
      const doc = (await service.request('GET', '/openapi.json')).body;
      const validate = documentSchemas(doc).at(pointer('paths', '/servers', 'get', 'responses', '200', 'content', 'application/json', 'schema'));
      expect(validate(list.body) ? [] : validate.errors).toEqual([]);
      const record = list.body.find((s: { id: string }) => s.id === id);
      expect(record).toMatchObject({ id, name: 'Cluster one', port, status: 'running', pid: null, extensions: [], workspace_path: '/data/workspace', phase: 'Running' });
      expect(Date.parse(record.start_time)).toBeGreaterThan(Date.now() - 120_000);
      for (const field of ['uptime', 'cpu_percent', 'memory_mb']) expect(typeof record[field], field).toBe('number');

      // The proxy at the service's own address reaches the editor in the Pod.
      const page = await fetch(`${service.url}/vscode/${port}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<h1>stub editor</h1>');

      // Work written in the Pod lands on the server's volume...
      await execInEditor(cluster!, ns, 'cluster-one', 'echo "kept across a stop" > /data/workspace/notes.txt');
      const volume = (await volumeOf(cluster!, ns, 'cluster-one'))!;
      expect(await workspaceFile(cluster!, ns, 'cluster-one', 'notes.txt')).toBe('kept across a stop\n');

      // ...and outlives the Pod: a stop takes the Pod away, a start makes a new one on the same claim.
      const stopped = await service.request('POST', `/servers/${id}/stop`);
      expect(stopped.body.data).toEqual({ id, status: 'stopped', pid: null });
      await eventually(async () => (await editorPod(cluster!, ns, 'cluster-one')) === undefined, POD_WAIT_MS, 250);
      const statefulSet = await getObject(cluster!, ['statefulset', 'devbox-cluster-one', '-n', ns]);
      expect(statefulSet.spec.replicas).toBe(0);
      const restarted = await service.request('POST', `/servers/${id}/start`);
      expect(restarted.status, JSON.stringify(restarted.body)).toBe(200);
      const second = await eventually(() => readyPod(cluster!, ns, 'cluster-one'), POD_WAIT_MS, 200);
      expect(second.metadata.uid).not.toBe(pod.metadata.uid);
      expect(await volumeOf(cluster!, ns, 'cluster-one')).toEqual(volume);
      expect(await execInEditor(cluster!, ns, 'cluster-one', 'cat /data/workspace/notes.txt')).toBe('kept across a stop');
      expect((await fetch(`${service.url}/vscode/${port}/`)).status).toBe(200);

      // Deleting the server deletes each of its objects, and the provisioner deletes its volume.
      // 200 once everything is gone; 202 when the Pod takes longer than the API waits (1.20's kubelet
      // sometimes keeps a stopped Pod Terminating for a minute: its kill races its own container
      // clean-up and fails with NotFound, and the next sync finishes it), and then gone all the same.
      const deleted = await service.request('DELETE', `/servers/${id}`);
      expect([200, 202], JSON.stringify(deleted.body)).toContain(deleted.status);
      await eventually(async () => (await objectsOf(cluster!, ns, 'cluster-one')).length === 0, POD_GONE_MS, 250);
      await eventually(async () => (await getObject(cluster!, ['pv', volume.pv])) === undefined, 30_000, 250);
      await eventually(() => fs.access(volume.folder).then(() => false, () => true), 30_000, 250);
      expect((await service.request('GET', `/servers/${id}`)).status).toBe(404);
      expect((await fetch(`${service.url}/vscode/${port}/`)).status).toBe(404);
    });

    it('runs a manifest file copied into the manifests folder as a Pod with its spec.resources, and stops it when the file goes, keeping its volume', async ({ expect }) => {
      const manifest = [
        'apiVersion: devbox.dev/v1alpha1',
        'kind: EditorServer',
        'metadata:',
        '  name: from-file',
        'spec:',
        '  displayName: From a file',
        '  running: true',
        '  resources:',
        '    requests: { cpu: 100m, memory: 96Mi }',
        '    limits: { cpu: "1", memory: 384Mi }',
        '',
      ].join('\n');
      const staged = join(service.root, 'from-file.yaml');
      await fs.writeFile(staged, manifest);
      await fs.copyFile(staged, join(service.settings.manifestsDir, 'from-file.yaml'));

      const pod = await eventually(() => readyPod(cluster!, ns, 'from-file'), POD_WAIT_MS, 200);
      const entry = await eventually(async () => {
        const found = await listed('from-file');
        return found?.status === 'running' && found;
      }, POD_WAIT_MS, 200);
      expect(entry).toMatchObject({ name: 'From a file', pid: null, resources: { requests: { cpu: '100m', memory: '96Mi' }, limits: { cpu: '1', memory: '384Mi' } } });
      expect(pod.spec.containers[0].resources).toEqual({ requests: { cpu: '100m', memory: '96Mi' }, limits: { cpu: '1', memory: '384Mi' } });
      expect(pod.spec.containers[0].ports).toEqual([expect.objectContaining({ containerPort: entry.port })]);
      expect((await fetch(`${service.url}/vscode/${entry.port}/`)).status).toBe(200);
      const volume = (await volumeOf(cluster!, ns, 'from-file'))!;

      // The file goes: after the orphan grace the editor is stopped and the server leaves the API;
      // its volume stays (only a deletion removes work), with its claim.
      await fs.rm(join(service.settings.manifestsDir, 'from-file.yaml'));
      await eventually(async () => (await service.request('GET', `/servers/${entry.id}`)).status === 404, POD_WAIT_MS, 250);
      await eventually(async () => (await editorPod(cluster!, ns, 'from-file')) === undefined, POD_GONE_MS, 250);
      expect((await getObject(cluster!, ['statefulset', 'devbox-from-file', '-n', ns])).spec.replicas).toBe(0);
      expect(await volumeOf(cluster!, ns, 'from-file')).toEqual(volume);
      expect((await fetch(`${service.url}/vscode/${entry.port}/`)).status).toBe(404);
    });
  });

  it('reports an editor that exits with code 1 at its start as the process runtime does: failed, Crashed, with what it said in the server\'s log', async () => {
    const created = await service.request('POST', '/servers', { name: 'Exits at start', extensions: [], port: EXITS_AT_START_PORT });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id } = created.body;
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(500);
    expect(started.body.error).toMatchObject({ code: 'EDITOR_FAILED', message: 'server "Exits at start" failed to start (Crashed): code-server exited with code 1' });

    // restartPolicy Never (the default): it stays so, its StatefulSet at zero and its Pod gone.
    const record = await eventually(async () => {
      const found = await recordOf(id);
      return found.status === 'failed' && found;
    }, POD_WAIT_MS, 250);
    expect(record).toMatchObject({ status: 'failed', phase: 'Failed', reason: 'Crashed', message: 'code-server exited with code 1', pid: null });
    await eventually(async () => (await editorPod(cluster!, ns, 'exits-at-start')) === undefined, POD_GONE_MS, 250);
    expect((await getObject(cluster!, ['statefulset', 'devbox-exits-at-start', '-n', ns])).spec.replicas).toBe(0);

    // What the editor said before it ended, once each (the log API merges its streams: INFO, and
    // in either order), not the words of the container's second run, which finds the editor already ran.
    const said = `[stub] cannot start on port ${EXITS_AT_START_PORT}: exiting with code 1 on purpose`;
    const logs: string[] = await eventually(async () => {
      const lines: string[] = (await service.request('GET', `/servers/${id}/logs?lines=200`)).body.data.logs;
      return lines.some((l) => l.endsWith(said)) && lines;
    }, 30_000, 250);
    expect(logs.filter((l) => / \[INFO\] \[server\] \[stub\] /.test(l)).map((l) => l.slice(l.indexOf('[stub]'))).sort())
      .toEqual([said, `[stub] starting on port ${EXITS_AT_START_PORT}`]);
    expect(logs.filter((l) => l.includes('already ran'))).toEqual([]);
  });

  describe('a running server\'s logs and a restart of the service', () => {
    let id: string;
    let port: number;
    let pod: any;

    beforeAll(async () => {
      ({ id, port } = (await service.request('POST', '/servers', { name: 'Logged', extensions: [] })).body);
      const started = await service.request('POST', `/servers/${id}/start`);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      pod = await eventually(() => readyPod(cluster!, ns, 'logged'), POD_WAIT_MS, 200);
    });

    it('serves the editor\'s output from the Pod log API, on GET /servers/{id}/logs and on its WebSocket stream', async () => {
      // What the editor printed at its start (stdout and stderr both: the log API merges them).
      const logs: string[] = await eventually(async () => {
        const lines: string[] = (await service.request('GET', `/servers/${id}/logs?lines=200`)).body.data.logs;
        return lines.some((l) => l.includes('[stub] a warning on stderr')) && lines;
      }, 30_000, 200);
      expect(logs).toContainEqual(expect.stringMatching(new RegExp(`^\\S+Z \\[INFO\\] \\[server\\] \\[stub\\] HTTP server listening on http://0\\.0\\.0\\.0:${port}/ workspace=/data/workspace$`)));
      // The log API gives stdout and stderr as one log: the stub's stderr line is INFO too.
      expect(logs).toContainEqual(expect.stringMatching(/ \[INFO\] \[server\] \[stub\] a warning on stderr$/));

      // A line the editor prints now comes over the server's stream as a log message (§2.6).
      const frames: any[] = [];
      const ws = new WebSocket(`${service.url.replace('http', 'ws')}/ws/logs/${id}?tail=0`);
      ws.on('message', (data) => frames.push(JSON.parse(String(data))));
      await opened(ws);
      try {
        const marker = `printed in the Pod ${Date.now()}`;
        // The editor is the container's first process: its standard output is the Pod's log.
        await execInEditor(cluster!, ns, 'logged', `echo "${marker}" > /proc/1/fd/1`);
        const frame = await eventually(() => frames.find((f) => f.message === marker), 20_000, 100);
        expect(frame).toEqual({ type: 'log', server_id: id, server_name: 'Logged', level: 'INFO', source: 'server', message: marker, timestamp: expect.any(String) });
        expect(Date.parse(frame.timestamp)).toBeGreaterThan(Date.now() - 60_000);
        expect((await service.request('GET', `/servers/${id}/logs?lines=5`)).body.data.logs).toContainEqual(expect.stringContaining(`[INFO] [server] ${marker}`));
      } finally {
        ws.close();
      }
    });

    it('is adopted, not started again, by the next service on the same folders: the same Pod, not restarted, running and proxied', async () => {
      const before = await recordOf(id);
      // The service goes; its editors keep running.
      await service.close();
      expect((await readyPod(cluster!, ns, 'logged'))?.metadata.uid).toBe(pod.metadata.uid);

      const restartedAt = new Date().toISOString();
      // The same folders and config (its port range included), as a restart of the same deployment.
      service = await startClusterService(cluster!, ns, stubEditor(), {
        kubernetes,
        root: service.root,
        config: { ports: service.settings.config.ports, controller: { orphanGraceSeconds: 1 } },
      });
      const after = await eventually(async () => {
        const record = await recordOf(id);
        return record.status === 'running' && record;
      }, 30_000, 200);
      expect(after).toMatchObject({ id, port, start_time: before.start_time, phase: 'Running', pid: null });
      const now = await editorPod(cluster!, ns, 'logged');
      expect(now.metadata.uid).toBe(pod.metadata.uid);
      expect(editorContainer(now).restartCount).toBe(0);
      expect(editorContainer(now).containerID).toBe(editorContainer(pod).containerID);
      // One editor Pod, and nothing else of the server's that stays (its storage helper, gone
      // with the first start, may still be on its way out: a Pod's deletion takes seconds).
      const pods = await getObject(cluster!, ['pods', '-n', ns, '-l', 'devbox.dev/server=logged']);
      expect(pods.items.filter((p: any) => !p.metadata.deletionTimestamp).map((p: any) => p.metadata.name)).toEqual(['devbox-logged-0']);
      const page = await fetch(`${service.url}/vscode/${port}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<h1>stub editor</h1>');
      // The adopted editor's output is followed from now on.
      const marker = `printed after the restart ${Date.now()}`;
      await execInEditor(cluster!, ns, 'logged', `echo "${marker}" > /proc/1/fd/1`);
      await eventually(async () => (await service.request('GET', `/servers/${id}/logs?lines=20`)).body.data.logs.some((l: string) => l.endsWith(`[INFO] [server] ${marker}`)), 20_000, 200);

      // Nothing was started: the server's log since the restart says no start.
      const since: string[] = (await service.request('GET', `/servers/${id}/logs?lines=500`)).body.data.logs.filter((l: string) => l >= restartedAt);
      expect(since.filter((l) => /starting code-server|created "Logged"/.test(l))).toEqual([]);
    });
  });
});
