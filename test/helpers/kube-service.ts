// The whole service with `runtime.kind: kubernetes` on the test cluster, for tests that assert what
// its API says about the cluster's faults: editors in a namespace of the test's own, the stub
// editor from the host (test/helpers/kube-runtime.ts), and a server's record read by its id.
import { DEFAULT_CONFIG, type KubernetesConfig } from '../../src/config/settings.ts';
import type { KubernetesRuntimeOptions } from '../../src/runtime/kubernetes/options.ts';
import type { TestCluster } from './cluster.ts';
import { runtimeOptions } from './kube-runtime.ts';
import { startTestService, type SettingsOverrides, type TestService } from './service.ts';

/**
 * Starts the service with its editors as Pods in `namespace`, running `editor` (stubEditor()).
 * `kubernetes` is laid over the test defaults (an image of the test's choice, say). The service's
 * waits are long enough for a Pod's start.
 */
export function startServiceOnCluster(
  cluster: TestCluster,
  namespace: string,
  editor: Pick<KubernetesRuntimeOptions, 'command' | 'extraMounts'>,
  overrides: SettingsOverrides & { kubernetes?: Partial<KubernetesConfig> } = {},
): Promise<TestService> {
  const { kubernetes: own, ...rest } = overrides;
  const kubernetes = { ...structuredClone(DEFAULT_CONFIG.runtime.kubernetes), ...runtimeOptions(namespace, editor, cluster), ...own };
  return startTestService({
    ...rest,
    runtime: { kind: 'kubernetes', kubernetes, namespaceFrom: 'DEVBOX_K8S_NAMESPACE' },
    config: {
      // The defaults every start reads (spec.resources is laid over them).
      runtime: { kind: 'kubernetes', kubernetes },
      ...rest.config,
      editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 2, ...rest.config?.editor },
    },
  });
}

/** The server's record as GET /servers/{id} answers it. */
export async function serverRecord(service: TestService, id: string): Promise<Record<string, any>> {
  const found = await service.request('GET', `/servers/${id}`);
  if (found.status !== 200) throw new Error(`GET /servers/${id}: ${found.status} ${JSON.stringify(found.body)}`);
  return found.body.data ?? found.body;
}

/** Creates a server through the API (no extensions: nothing to fetch) and asks it to start; resolves with its id and the start's answer. */
export async function createAndStart(service: TestService, name: string, body: Record<string, unknown> = {}): Promise<{ id: string; started: { status: number; body: any } }> {
  const created = await service.request('POST', '/servers', { name, extensions: [], ...body });
  if (created.status !== 201) throw new Error(`POST /servers ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id ?? created.body.data?.id;
  const started = await service.request('POST', `/servers/${id}/start`);
  return { id, started };
}
