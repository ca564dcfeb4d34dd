// The Kubernetes runtime passes the runtime conformance suite, unchanged, against the real test
// cluster (scripts/test-cluster.sh): editors are Pods on its kubelet (the stub editor from the
// host, in the busybox image), storage is a claim bound by the cluster's provisioner.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { createKubernetesRuntime } from '../../src/runtime/kubernetes/runtime.ts';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { testCluster, NO_CLUSTER } from '../helpers/cluster.ts';
import { killContainer, kubectl, podRunsAnything, runtimeOptions, stubEditor, testNamespace, TEST_IMAGE } from '../helpers/kube-runtime.ts';
import { conformanceSources, type ConformanceSources } from '../runtime/conformance-sources.ts';
import { runtimeConformance, type Harness } from '../runtime/conformance.ts';
import { stalledGitServer } from '../workspace/git-fixtures.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

let sources: ConformanceSources;

beforeAll(async () => {
  if (!cluster) return;
  sources = await conformanceSources();
});
afterAll(async () => {
  await sources?.stop();
});

type Json = { metadata?: { name?: string; uid?: string }; spec?: Record<string, any>; status?: Record<string, any>; items?: Json[] };
const json = async (...args: string[]): Promise<Json> => JSON.parse(await kubectl(cluster!, ...args, '-o', 'json'));

async function kubernetesHarness(): Promise<Harness> {
  const c = cluster!;
  const namespace = await testNamespace(c, 'devbox-conformance');
  const ns = namespace.name;
  const exitsAtStartPort = 19_999;
  const options = { ...runtimeOptions(ns, stubEditor(), c), env: { STUB_EXIT_ON_PORT: String(exitsAtStartPort) } };
  const runtimes = [createKubernetesRuntime(options)];
  await runtimes[0].workload.synced();
  const stalled = await stalledGitServer();
  let nextPort = 20_000;
  const pod = async (name: string) => json('get', 'pod', '-n', ns, name).catch(() => undefined);
  /** The host folder of the server's volume (the provisioner's hostPath). */
  const volumeOf = async (name: string) => {
    const claim = await json('get', 'pvc', '-n', ns, `devbox-${name}`).catch(() => undefined);
    const volume = claim?.spec?.volumeName ? await json('get', 'pv', claim.spec.volumeName).catch(() => undefined) : undefined;
    return volume?.spec?.hostPath?.path as string | undefined;
  };

  const harness: Harness = {
    runtime: runtimes[0],
    async restart() {
      harness.runtime.workload.dispose();
      runtimes.push(createKubernetesRuntime(options));
      harness.runtime = runtimes.at(-1)!;
      await harness.runtime.workload.synced();
      return harness.runtime;
    },
    port: async () => nextPort++,
    exitsAtStartPort,
    // Any of the Pod's containers, as containerd runs them (the Pod's object goes a few seconds later).
    running: (ref) => podRunsAnything(c, String(ref.uid)),
    async kill(ref) {
      const found = await pod(String(ref.pod));
      const container = found?.status?.containerStatuses?.find((s: { name: string }) => s.name === 'editor');
      if (!container?.containerID) throw new Error(`no running editor container in ${ref.pod}`);
      await killContainer(c, container.containerID);
    },
    killSignal: 'SIGKILL',
    async stranger() {
      const name = `stranger-${nextPort++}`;
      await kubectl(c, 'run', name, '-n', ns, `--image=${TEST_IMAGE}`, '--image-pull-policy=Never', '--restart=Never', '--command', '--', 'sleep', '3600');
      await kubectl(c, 'wait', '-n', ns, '--for=condition=Ready', `pod/${name}`, '--timeout=60s');
      const found = await pod(name);
      return { kind: 'kubernetes', namespace: ns, pod: name, uid: found!.metadata!.uid! } satisfies RuntimeRef;
    },
    async workspaceFiles(name) {
      const files = new Map<string, string>();
      const volume = await volumeOf(name);
      if (!volume) return files;
      const workspace = join(volume, 'workspace');
      for (const entry of await fs.readdir(workspace, { recursive: true, withFileTypes: true }).catch(() => [])) {
        const path = join(entry.parentPath, entry.name).slice(workspace.length + 1);
        if (entry.isFile() && !path.startsWith('.git/')) files.set(path, await fs.readFile(join(workspace, path), 'utf8'));
      }
      return files;
    },
    async leftovers(name) {
      const found = await json('get', 'configmaps,pvc,services,statefulsets,pods', '-n', ns, '-l', `devbox.dev/server=${name}`);
      return (found.items ?? []).map((item) => `${(item as { kind?: string }).kind} ${item.metadata?.name}`);
    },
    sources: {
      git: sources.git,
      zip: sources.zip,
      stalledGit: { git: { url: stalled.url }, schemes: ['git'], timeoutMs: 60_000 },
      stalledGitReached: stalled.reached,
    },
    extension: { id: 'acme.tool', key: 'acme.tool' },
    readyTimeoutMs: 60_000,
    async cleanup() {
      for (const runtime of runtimes) runtime.workload.dispose();
      await stalled.close();
      await namespace.remove();
    },
  };
  return harness;
}

describe.skipIf(!cluster)('on the test cluster', { timeout: 180_000 }, () => {
  runtimeConformance('Kubernetes runtime', kubernetesHarness);
});
