// The Kubernetes runtime as the Kubernetes suite runs it on the test cluster: a namespace of the
// test's own, and editors run from the host in the cluster's tiny busybox image (the stub editor
// or the real code-server from the cache, with the Node.js that runs each, mounted read-only).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ExtraMount, KubernetesRuntimeOptions } from '../../src/runtime/kubernetes/options.ts';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import type { TestCluster } from './cluster.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
export const TEST_IMAGE = 'devbox.local/busybox:1';

/** The host folders a Node.js program needs inside the busybox image: its libraries. */
const LIBRARIES: ExtraMount[] = [
  { name: 'host-lib', mountPath: '/lib/x86_64-linux-gnu', hostPath: { path: '/lib/x86_64-linux-gnu', type: 'Directory' } },
  { name: 'host-usr-lib', mountPath: '/usr/lib/x86_64-linux-gnu', hostPath: { path: '/usr/lib/x86_64-linux-gnu', type: 'Directory' } },
  { name: 'host-lib64', mountPath: '/lib64', hostPath: { path: '/lib64', type: 'Directory' } },
];

/** The stub editor (test/fixtures/stub-editor.mjs) on the project's Node.js. */
export function stubEditor(): Pick<KubernetesRuntimeOptions, 'command' | 'extraMounts'> {
  const node = realpathSync(join(ROOT, 'node_modules', '.bin', 'node'));
  return {
    command: ['/opt/node/node', '/opt/fixtures/stub-editor.mjs'],
    extraMounts: [
      ...LIBRARIES,
      { name: 'node', mountPath: '/opt/node', hostPath: { path: dirname(node), type: 'Directory' } },
      { name: 'fixtures', mountPath: '/opt/fixtures', hostPath: { path: join(ROOT, 'test', 'fixtures'), type: 'Directory' } },
    ],
  };
}

/** The real code-server the install built: its launcher runs the cache's own Node.js by absolute paths, so the cache is mounted where it is. */
export function realEditor(): Pick<KubernetesRuntimeOptions, 'command' | 'extraMounts'> | undefined {
  let bin: string;
  try {
    bin = realpathSync(resolveEditorBinary().path);
  } catch {
    return undefined;
  }
  // <cache>/code-server-<v>/bin/code-server
  const cache = dirname(dirname(dirname(bin)));
  return {
    command: ['sh', bin],
    extraMounts: [...LIBRARIES, { name: 'editor-cache', mountPath: cache, hostPath: { path: cache, type: 'Directory' } }],
  };
}

export function runtimeOptions(namespace: string, editor: Pick<KubernetesRuntimeOptions, 'command' | 'extraMounts'>, cluster: TestCluster): KubernetesRuntimeOptions {
  return {
    kubeconfig: cluster.kubeconfig,
    namespace,
    image: TEST_IMAGE,
    imagePullPolicy: 'Never',
    command: editor.command,
    storage: { size: '1Gi' },
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '1Gi' } },
    runAsUser: 1000,
    extraMounts: editor.extraMounts,
    env: {},
    namePrefix: 'devbox-',
  };
}

export function kubectl(cluster: TestCluster, ...args: string[]): Promise<string> {
  return run(cluster.kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], { maxBuffer: 16 * 1024 * 1024 }).then((r) => r.stdout);
}

/** A namespace of the test's own; `remove` deletes it (and everything in it) without waiting. */
export async function testNamespace(cluster: TestCluster, prefix = 'devbox-test'): Promise<{ name: string; remove(): Promise<void> }> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kubectl(cluster, 'create', 'namespace', name);
  return { name, remove: () => kubectl(cluster, 'delete', 'namespace', name, '--wait=false').then(() => undefined, () => undefined) };
}

/** True while any of the Pod's containers (by its uid; not its sandbox's pause process) has a running task in the cluster's containerd: its processes, whatever the API says. */
export async function podRunsAnything(cluster: TestCluster, uid: string): Promise<boolean> {
  const ctr = ['-a', join(cluster.runDir, 'containerd', 'containerd.sock'), '-n', 'k8s.io'];
  const ids = new Set((await run('ctr', [...ctr, 'containers', 'ls', '-q', `labels."io.kubernetes.pod.uid"==${uid},labels."io.cri-containerd.kind"==container`])).stdout.split('\n').filter(Boolean));
  if (ids.size === 0) return false;
  const tasks = (await run('ctr', [...ctr, 'tasks', 'ls'])).stdout.split('\n').slice(1).map((line) => line.trim().split(/\s+/));
  return tasks.some(([id, , status]) => ids.has(id) && status === 'RUNNING');
}

/** SIGKILLs a container's task through the cluster's containerd, as the OOM killer would. */
export async function killContainer(cluster: TestCluster, containerId: string): Promise<void> {
  const id = containerId.replace(/^containerd:\/\//, '');
  await run('ctr', ['-a', join(cluster.runDir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
}
