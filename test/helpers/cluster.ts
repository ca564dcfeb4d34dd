// The Kubernetes test cluster (scripts/test-cluster.sh) as the Kubernetes suite finds it: its
// kubeconfig, kubectl, and whether its API server answers now. Files of the suite skip
// themselves with `NO_CLUSTER` when it does not, so plain `npm test` says why they did not run;
// `npm run test:kubernetes` brings the cluster up first. Below: faults to inject into it.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { eventually } from './wait.ts';

export interface TestCluster {
  /** The admin kubeconfig (a static bearer token: a test cluster only). */
  kubeconfig: string;
  /** Debian's kubectl 1.20 built beside the cluster. */
  kubectl: string;
  /** The folder the running cluster lives in (its logs, its containerd socket). */
  runDir: string;
  /** The API server's address, e.g. https://127.0.0.1:16443. */
  server: string;
}

export const RUN_DIR = process.env.DEVBOX_TEST_CLUSTER_DIR ?? '/tmp/devbox-test-cluster';
const CACHE_DIR = process.env.DEVBOX_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'devbox-controller');
const KUBECTL = join(CACHE_DIR, 'kubernetes-1.20.2', 'bin', 'kubectl');

/** Why the Kubernetes suite did not run, printed by every file that skips. */
export const NO_CLUSTER = `no Kubernetes test cluster answers (${RUN_DIR}): the Kubernetes suite is skipped; run \`npm run test:kubernetes\` (root) to build, start and test against one`;

let found: Promise<TestCluster | undefined> | undefined;

/** The running test cluster, or undefined when there is none or its API server does not answer /readyz. */
export function testCluster(): Promise<TestCluster | undefined> {
  found ??= probe();
  return found;
}

async function probe(): Promise<TestCluster | undefined> {
  const kubeconfig = join(RUN_DIR, 'kubeconfig');
  if (!existsSync(kubeconfig) || !existsSync(KUBECTL)) return undefined;
  const text = readFileSync(kubeconfig, 'utf8');
  const server = /server:\s*(\S+)/.exec(text)?.[1];
  const token = /token:\s*(\S+)/.exec(text)?.[1];
  const ca = /certificate-authority:\s*(\S+)/.exec(text)?.[1];
  if (!server || !token || !ca) return undefined;
  const { Agent, fetch } = await import('undici');
  const dispatcher = new Agent({ connect: { ca: readFileSync(ca) } });
  try {
    const res = await fetch(`${server}/readyz`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(3000),
      dispatcher,
    });
    await res.body?.cancel();
    return res.ok ? { kubeconfig, kubectl: KUBECTL, runDir: RUN_DIR, server } : undefined;
  } catch {
    return undefined;
  } finally {
    await dispatcher.close();
  }
}

/** Runs the cluster's kubectl as its admin; resolves with its standard output, rejects with its error output. */
export async function kubectl(cluster: TestCluster, args: string[], input?: string): Promise<string> {
  const { stdout } = await execa(cluster.kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], { input, timeout: 60_000 });
  return stdout;
}

/** `kubectl get -o json` of one object, or undefined when it does not exist. */
export async function getObject<T = any>(cluster: TestCluster, args: string[]): Promise<T | undefined> {
  const out = await kubectl(cluster, ['get', ...args, '-o', 'json', '--ignore-not-found']);
  return out.trim() ? (JSON.parse(out) as T) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Faults. What touches the cluster's own processes goes through scripts/test-cluster.sh, which
// knows their pids and containerd's socket; these need root, as the cluster does.
// ---------------------------------------------------------------------------------------------

const SCRIPT = fileURLToPath(new URL('../../scripts/test-cluster.sh', import.meta.url));

/** The cluster's processes, as `scripts/test-cluster.sh kill|start` name them. */
export type ClusterComponent =
  | 'etcd'
  | 'kube-apiserver'
  | 'kube-controller-manager'
  | 'kube-scheduler'
  | 'provisioner'
  | 'containerd'
  | 'kubelet';

async function clusterScript(args: string[], timeoutMs: number): Promise<void> {
  // The script's own log lines go to the test's output: they say what was done to the cluster.
  await execa(SCRIPT, args, { timeout: timeoutMs, stdout: 'inherit', stderr: 'inherit', env: { DEVBOX_TEST_CLUSTER_DIR: RUN_DIR } });
}

/**
 * SIGKILLs a container's task through the cluster's containerd, as the OOM killer would: the
 * container ends with exit code 137 and the kubelet sees it end (the pod's status says reason
 * `Error`, not `OOMKilled`, which only a cgroup's OOM kill sets). `containerId` as in a pod's
 * `status.containerStatuses[].containerID`, with or without its `containerd://` prefix.
 */
export async function killEditorContainer(containerId: string): Promise<void> {
  await clusterScript(['kill-container', containerId], 30_000);
}

/** SIGKILLs one of the cluster's processes (no shutdown, as a crash); resolves once it is gone. */
export async function killComponent(name: ClusterComponent): Promise<void> {
  await clusterScript(['kill', name], 30_000);
}

/**
 * Starts a component again with the flags `up` gave it; resolves once it is ready (the API
 * server's /readyz, the node Ready by the new kubelet's own status report, and so on).
 */
export async function startComponent(name: ClusterComponent): Promise<void> {
  await clusterScript(['start', name], 120_000);
}

export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/**
 * A plain busybox pod that is not ours (no devbox labels), for showing that the runtime leaves
 * what it did not make alone; resolves once it runs. Deleting it takes a second: busybox's sleep
 * ignores SIGTERM, so its grace period is short.
 */
export async function strangerPod(namespace: string): Promise<PodRef> {
  const cluster = await testCluster();
  if (!cluster) throw new Error(NO_CLUSTER);
  const name = `stranger-${randomBytes(4).toString('hex')}`;
  await kubectl(cluster, ['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'stranger' } },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'devbox.local/busybox:1', imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
    },
  }));
  const pod = await eventually(async () => {
    const found = await getObject(cluster, ['pod', name, '-n', namespace]);
    return found?.status?.phase === 'Running' && found;
  }, 30_000, 200);
  return { namespace, name, uid: pod.metadata.uid };
}
