// The Kubernetes test cluster (scripts/test-cluster.sh) as the Kubernetes suite finds it: its
// kubeconfig, kubectl, and whether its API server answers now. Files of the suite skip
// themselves with `NO_CLUSTER` when it does not, so plain `npm test` says why they did not run;
// `npm run test:kubernetes` brings the cluster up first.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

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
