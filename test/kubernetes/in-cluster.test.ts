// The controller run in the cluster as deploy/kubernetes/ ships it: its Role (and nothing more),
// its config (runtime kubernetes, source crd, leader election), its Deployment's security
// context and probes. A patch built here, never shipped, swaps the image (no registry here) for the
// cluster's busybox with this checkout and Node.js 22 mounted read-only from the host, and points
// the client at the API server's bridge address. It serves the API at its Pod's address, runs a
// server's editor as a Pod reachable through its proxy, keeps one leader among two replicas, and
// a new leader after the leader is killed (SIGKILL) adopts the running editor without restarting it.
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getObject, killEditorContainer, kubectl, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { stubEditor, TEST_IMAGE, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually } from '../helpers/wait.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

const ROOT = resolve(import.meta.dirname, '..', '..');
/** Node.js 22 as the project installs it (node_modules may be a link to another checkout's). */
const NODE_MODULES = realpathSync(join(ROOT, 'node_modules'));
const NODE = realpathSync(join(ROOT, 'node_modules', '.bin', 'node'));
const SHIPPED = join(ROOT, 'deploy', 'kubernetes');
const POD_WAIT_MS = 90_000;

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let createdCrd = false;

/** The shipped manifests, rendered by kubectl's kustomize, with the test-only changes. */
async function rendered(): Promise<Array<Record<string, any>>> {
  const text = await kubectl(cluster!, ['kustomize', SHIPPED]);
  const objects = parseAllDocuments(text).map((d) => d.toJSON()).filter(Boolean);
  const api = new URL(cluster!.server);
  const editor = stubEditor();
  return objects
    // The CRD is cluster-wide and applied on its own; the namespace is the test's own.
    .filter((o) => o.kind !== 'CustomResourceDefinition' && o.kind !== 'Namespace')
    .map((o) => {
      if (o.metadata.namespace) o.metadata.namespace = ns;
      if (o.kind === 'RoleBinding') for (const s of o.subjects) s.namespace = ns;
      if (o.kind === 'ConfigMap') {
        // The shipped config, with editors that run in this cluster: the stub from the host.
        const config = (parseAllDocuments(o.data['devbox.config.yaml'])[0].toJSON()) as any;
        expect(config.runtime.kubernetes).toMatchObject({ source: 'crd', leaderElection: true });
        Object.assign(config.runtime.kubernetes, {
          image: TEST_IMAGE, imagePullPolicy: 'Never', command: editor.command, extraMounts: editor.extraMounts, storage: { size: '100Mi' },
        });
        o.data['devbox.config.yaml'] = stringify(config);
      }
      if (o.kind === 'Deployment') {
        const pod = o.spec.template.spec;
        const container = pod.containers[0];
        container.image = TEST_IMAGE;
        container.imagePullPolicy = 'Never';
        container.command = [NODE, join(ROOT, 'src', 'main.ts')];
        container.workingDir = ROOT;
        // Container env wins over what the kubelet injects: the API server's bridge address,
        // as no kube-proxy routes the kubernetes Service's ClusterIP here.
        container.env.push({ name: 'KUBERNETES_SERVICE_HOST', value: api.hostname }, { name: 'KUBERNETES_SERVICE_PORT', value: api.port });
        const hostMounts: Array<[string, string]> = [
          ['checkout', ROOT], ['node-modules', NODE_MODULES],
          ['host-lib', '/lib/x86_64-linux-gnu'], ['host-usr-lib', '/usr/lib/x86_64-linux-gnu'], ['host-lib64', '/lib64'],
        ];
        for (const [name, path] of hostMounts) {
          container.volumeMounts.push({ name, mountPath: path, readOnly: true });
          pod.volumes.push({ name, hostPath: { path, type: 'Directory' } });
        }
      }
      return o;
    });
}

async function apply(objects: Array<Record<string, any>>): Promise<void> {
  await kubectl(cluster!, ['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
}

async function controllerPods(): Promise<any[]> {
  const list = await getObject(cluster!, ['pods', '-n', ns, '-l', 'app.kubernetes.io/component=controller']);
  return (list?.items ?? []).filter((p: any) => !p.metadata.deletionTimestamp);
}

const isReady = (pod: any) => pod.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
const leaseHolder = async () => (await getObject(cluster!, ['lease', 'devbox-controller', '-n', ns]))?.spec?.holderIdentity;

async function call(pod: any, method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`http://${pod.status.podIP}:8000${path}`, {
    method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** The one Ready controller Pod that holds the Lease. */
async function leader(): Promise<any> {
  return eventually(async () => {
    const holder = await leaseHolder();
    const pod = (await controllerPods()).find((p) => p.metadata.name === holder);
    return pod && isReady(pod) && pod;
  }, POD_WAIT_MS, 500);
}

beforeAll(async () => {
  if (!cluster) return;
  namespace = await testNamespace(cluster, 'devbox-incluster');
  ns = namespace.name;
  if (!(await getObject(cluster, ['crd', 'editorservers.devbox.dev']))) {
    await kubectl(cluster, ['apply', '-f', join(SHIPPED, 'crd.yaml')]);
    createdCrd = true;
    await kubectl(cluster, ['wait', '--for=condition=Established', 'crd/editorservers.devbox.dev', '--timeout=30s']);
  }
}, 60_000);

afterAll(async () => {
  if (!cluster || !ns) return;
  // The controllers go first: a running one would put its finalizer back on the servers.
  await kubectl(cluster, ['delete', 'deployment', 'devbox-controller', '-n', ns, '--wait=false']).catch(() => undefined);
  await kubectl(cluster, ['delete', 'pods', '-n', ns, '-l', 'app.kubernetes.io/component=controller', '--grace-period=0', '--force']).catch(() => undefined);
  await eventually(async () => (await controllerPods()).length === 0, 30_000, 500).catch(() => undefined);
  // Servers left by a failed test: their finalizer would hold the namespace once no controller runs.
  const left = await getObject(cluster, ['editorservers', '-n', ns]).catch(() => undefined);
  for (const item of left?.items ?? []) {
    await kubectl(cluster, ['patch', 'editorserver', item.metadata.name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']).catch(() => undefined);
  }
  await namespace.remove();
  if (createdCrd) await kubectl(cluster, ['delete', 'crd', 'editorservers.devbox.dev', '--wait=false']).catch(() => undefined);
}, 60_000);

describe.skipIf(!cluster)(cluster ? 'the controller in the cluster' : `the controller in the cluster (${NO_CLUSTER})`, () => {
  it('serves from its Pod with only the shipped RBAC, runs an editor Pod it proxies, keeps one leader of two, and a new leader adopts the editor', { timeout: 300_000 }, async () => {
    await apply(await rendered());

    // One replica: it takes the Lease, serves, and is Ready.
    const first = await leader();
    expect((await call(first, 'GET', '/livez')).body).toEqual({ status: 'alive' });
    const health = await call(first, 'GET', '/health');
    expect(health.status, health.text).toBe(200);
    expect((await call(first, 'GET', '/servers')).body).toEqual([]);

    // A server through its API: an EditorServer object, and an editor Pod proxied at the controller's address.
    const created = await call(first, 'POST', '/servers', { name: 'in-cluster', extensions: [] });
    expect(created.status, created.text).toBe(201);
    const { id, port } = created.body;
    expect((await getObject(cluster!, ['editorserver', 'in-cluster', '-n', ns]))?.metadata?.uid).toBe(id);
    const started = await call(first, 'POST', `/servers/${id}/start`);
    expect(started.status, started.text).toBe(200);
    const editor = await eventually(async () => {
      const pod = await getObject(cluster!, ['pod', 'devbox-in-cluster-0', '-n', ns]);
      return isReady(pod) && pod;
    }, POD_WAIT_MS, 500);
    const page = await eventually(async () => {
      const answer = await call(first, 'GET', `/vscode/${port}/`);
      return answer.status === 200 && answer;
    }, 30_000, 500);
    expect(page.text).toContain('<h1>stub editor</h1>');

    // Two replicas: the second is a standby, alive but not Ready, answering 503.
    await kubectl(cluster!, ['scale', 'deployment', 'devbox-controller', '-n', ns, '--replicas=2']);
    const standby = await eventually(async () => {
      const pod = (await controllerPods()).find((p) => p.metadata.name !== first.metadata.name);
      // Standing by from its start, and naming the leader once it has read the Lease.
      return pod?.status?.podIP && (await call(pod, 'GET', '/livez').catch(() => undefined))?.body?.leader && pod;
    }, POD_WAIT_MS, 500);
    expect((await call(standby, 'GET', '/livez')).body).toEqual({ status: 'standby', leader: first.metadata.name });
    const refused = await call(standby, 'GET', '/servers');
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('STANDBY');
    // Its readiness probe has run and failed (the kubelet's Unhealthy event), and it is not Ready.
    await eventually(async () => {
      const events = await getObject(cluster!, ['events', '-n', ns, '--field-selector', `involvedObject.name=${standby.metadata.name},reason=Unhealthy`]);
      return (events?.items ?? []).some((e: any) => /Readiness probe failed/.test(e.message)) || undefined;
    }, POD_WAIT_MS, 500);
    expect(isReady((await controllerPods()).find((p) => p.metadata.name === standby.metadata.name))).toBe(false);
    expect(await leaseHolder()).toBe(first.metadata.name);

    // The leader is killed (SIGKILL: no goodbye, the Lease is not handed back). A leader comes
    // back once the Lease runs out (the standby, or the killed one restarted by its kubelet) and
    // adopts the running editor.
    const leaderContainer = first.status.containerStatuses[0];
    await killEditorContainer(leaderContainer.containerID);
    const next = await eventually(async () => {
      const pod = await leader();
      const restarted = pod.metadata.name === first.metadata.name
        && pod.status.containerStatuses[0].containerID !== leaderContainer.containerID;
      return (pod.metadata.name !== first.metadata.name || restarted) && pod;
    }, POD_WAIT_MS, 500);
    const record = await eventually(async () => {
      const answer = await call(next, 'GET', `/servers/${id}`);
      return answer.status === 200 && answer.body.status === 'running' && answer.body;
    }, 60_000, 500);
    expect(record).toMatchObject({ id, port, status: 'running' });
    const after = await getObject(cluster!, ['pod', 'devbox-in-cluster-0', '-n', ns]);
    expect(after.metadata.uid).toBe(editor.metadata.uid);
    expect(after.status.containerStatuses[0].restartCount).toBe(0);
    expect((await call(next, 'GET', `/vscode/${port}/`)).text).toContain('<h1>stub editor</h1>');

    // The server deleted through the new leader: its object and its editor go.
    // 200 once it is gone within the stop's time, 202 while it is still going (the interface's two
    // answers: the Pod's own termination on a busy node can take longer); gone either way.
    const deleted = await call(next, 'DELETE', `/servers/${id}`);
    expect([200, 202], deleted.text).toContain(deleted.status);
    await eventually(async () => !(await getObject(cluster!, ['editorserver', 'in-cluster', '-n', ns])) && !(await getObject(cluster!, ['pod', 'devbox-in-cluster-0', '-n', ns])), POD_WAIT_MS, 500);
  });
});
