// The whole service with `runtime.kind: kubernetes`: the composition root builds the Kubernetes
// runtime from the settings (here replaced by the test FakeRuntime, which speaks as a cluster
// runtime does: no pid, its output only through logs(), no memory of its own), waits for its
// first view, and the API, logs, capacity and records work on its editors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/settings.ts';
import type { KubernetesRuntimeOptions } from '../../src/runtime/kubernetes/options.ts';
import { DEFAULT_EDITOR_IMAGE } from '../../src/runtime/kubernetes/options.ts';
import { KubernetesWorkload } from '../../src/runtime/kubernetes/runtime.ts';
import type { EditorRuntime } from '../../src/runtime/interface.ts';
import { StartupError } from '../../src/service.ts';
import { runtimeSynced } from '../../src/service-runtime.ts';
import { FakeRuntime } from '../helpers/fakes.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const cluster = vi.hoisted(() => ({ built: [] as Array<{ options: unknown; runtime: unknown }>, storage: '', synced: 0 }));

vi.mock('../../src/runtime/kubernetes/runtime.ts', async () => {
  const { FakeRuntime: Fake } = await import('../helpers/fakes.ts');
  const { DataLayout } = await import('../../src/workspace/layout.ts');
  class KubernetesWorkload extends Fake {
    readonly options: KubernetesRuntimeOptions;
    constructor(options: KubernetesRuntimeOptions) {
      super(new DataLayout(cluster.storage));
      this.options = options;
      // A cluster's scheduler decides where editors fit: no memory of its own to share.
      this.machine = undefined;
      cluster.built.push({ options, runtime: this });
    }

    async synced(): Promise<void> {
      cluster.synced++;
    }
  }
  // Both halves and the health checks are the one stand-in; its output is a stream, as a cluster's.
  const createKubernetesRuntime = (options: KubernetesRuntimeOptions) => new KubernetesWorkload(options).asRuntime();
  return { KubernetesWorkload, createKubernetesRuntime };
});

let service: TestService;
let runtime: FakeRuntime;

beforeAll(async () => {
  cluster.storage = mkdtempSync(join(tmpdir(), 'devbox-cluster-storage-'));
  service = await startTestService({
    // A start the cluster cannot place answers 202 after this wait.
    config: { editor: { startTimeoutSeconds: 1 } },
    runtime: { kind: 'kubernetes', kubernetes: { ...structuredClone(DEFAULT_CONFIG.runtime.kubernetes), namespace: 'editors' }, namespaceFrom: 'DEVBOX_K8S_NAMESPACE' },
  });
  runtime = cluster.built[0].runtime as FakeRuntime;
});
afterAll(async () => {
  await service?.stop();
  rmSync(cluster.storage, { recursive: true, force: true });
});

describe('the service on the Kubernetes runtime', () => {
  it('builds the runtime from the settings, with the pinned image by default, and waits for its first view', () => {
    expect(cluster.built).toHaveLength(1);
    expect(runtime).toBeInstanceOf(KubernetesWorkload);
    expect(cluster.built[0].options).toMatchObject({
      namespace: 'editors',
      image: DEFAULT_EDITOR_IMAGE,
      imagePullPolicy: 'IfNotPresent',
      command: ['code-server'],
      storage: { size: '10Gi' },
      resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
      runAsUser: 1000,
      namePrefix: 'devbox-',
    });
    expect(cluster.synced).toBe(1);
    expect(service.lines).toContain(`runtime: kubernetes, namespace editors (from DEVBOX_K8S_NAMESPACE), image ${DEFAULT_EDITOR_IMAGE}`);
  });

  it('starts an editor, shows it running without a pid, and serves its output from the runtime\'s log stream', async () => {
    const created = await service.request('POST', '/servers', { name: 'Pod one', extensions: [] });
    expect(created.status).toBe(201);
    const { id } = created.body;
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.data).toMatchObject({ status: 'running', pid: null });
    const record = (await service.request('GET', `/servers/${id}`)).body;
    expect(record).toMatchObject({ status: 'running', pid: null, phase: 'Running', resources: null });
    expect(record.start_time).not.toBeNull();

    runtime.print('pod-one', 'HTTP server listening on http://0.0.0.0:8080/');
    runtime.print('pod-one', 'an extension warned', 'stderr');
    const logs = await eventually(async () => {
      const lines: string[] = (await service.request('GET', `/servers/${id}/logs?lines=100`)).body.data.logs;
      return lines.some((l) => l.endsWith('[WARN] [server] an extension warned')) && lines;
    }, 5000);
    expect(logs.some((l) => l.endsWith('[INFO] [server] HTTP server listening on http://0.0.0.0:8080/'))).toBe(true);
    await service.request('POST', `/servers/${id}/stop`);
  });

  it('shows a start the cluster cannot place as Pending with the scheduler\'s words, and the platform\'s events among the server\'s', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'Too big', extensions: [] })).body;
    runtime.notPlaced = { reason: 'Unschedulable', message: '0/1 nodes are available: 1 Insufficient memory.' };
    try {
      const started = await service.request('POST', `/servers/${id}/start`);
      expect(started.status).toBe(202);
      expect(started.body.message).toContain('(Unschedulable: 0/1 nodes are available: 1 Insufficient memory.)');
      expect((await service.request('GET', `/servers/${id}`)).body).toMatchObject({ status: 'starting', phase: 'Pending', reason: 'Unschedulable' });
      runtime.emitEvent('too-big', { level: 'WARN', reason: 'FailedScheduling', message: '0/1 nodes are available: 1 Insufficient memory.' });
      const events = await eventually(async () => {
        const list = (await service.request('GET', `/servers/${id}/events`)).body.data.events as Array<{ reason: string; type: string }>;
        return list.some((e) => e.reason === 'FailedScheduling') && list;
      }, 5000);
      expect(events).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'Warning', reason: 'FailedScheduling' })]));
    } finally {
      runtime.notPlaced = undefined;
    }
    // Room frees: the standing start is placed and runs.
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.status === 'running', 10_000);
    await service.request('POST', `/servers/${id}/stop`);
  });

  it('has capacity set no memory limit of its own: the cluster\'s scheduler decides', async () => {
    const health = (await service.request('GET', '/health')).body;
    expect(health.capacity).toMatchObject({ memory_limit_mb: null, memory_limit_source: expect.stringContaining('no limit of ours') });
    expect(health.editor ?? JSON.stringify(health)).toContain(DEFAULT_EDITOR_IMAGE);
  });
});

describe('waiting for a cluster runtime\'s first view', () => {
  const runtimeWhose = (synced: () => Promise<void>) => ({ kind: 'kubernetes', workload: { synced } } as unknown as EditorRuntime);

  it('refuses the start, saying what to check, when the cluster does not answer in time or the runtime cannot see it', async () => {
    const lines: string[] = [];
    const never = runtimeSynced(runtimeWhose(() => new Promise(() => {})), (line) => lines.push(line), 50);
    await expect(never).rejects.toThrow(StartupError);
    await expect(never).rejects.toThrow('the kubernetes runtime had no view of its editors after 0.05 s: check that the cluster answers');
    const refused = runtimeSynced(runtimeWhose(() => Promise.reject(new Error('Forbidden: pods is forbidden'))), () => {}, 1000);
    await expect(refused).rejects.toThrow('the kubernetes runtime could not see its editors: Forbidden: pods is forbidden');
  });
});
