// The server record for an editor that is not a local process (a Pod): no pid, yet its start
// time, uptime and usage show like a process's; and the manifest's resources beside the rest.
import { describe, expect, it } from 'vitest';
import { serverView } from '../../src/api/views.ts';
import { API_VERSION, KIND, type EditorServer } from '../../src/manifests/types.ts';

function recordOf(server: EditorServer) {
  return { name: server.metadata.name, server };
}

describe('a server record', () => {
  const startTime = new Date(Date.now() - 5000).toISOString();
  const pod = { kind: 'kubernetes', namespace: 'editors', pod: 'devbox-alpha-0', uid: '0c1d' };

  it('shows a Pod\'s start time, uptime and usage, with pid null', () => {
    const view = serverView(recordOf({
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'alpha', uid: '5f0c0000-0000-4000-8000-000000000001' },
      spec: { running: true },
      status: { phase: 'Running', runtimeRef: pod, port: 8010, startTime },
    }), { cpuPercent: 3, memoryMb: 420, uptime: 5 });
    expect(view).toMatchObject({ status: 'running', pid: null, start_time: startTime, cpu_percent: 3, memory_mb: 420 });
    expect(view.uptime).toBeGreaterThan(4);
  });

  it('shows a process\'s pid and start time as before, and neither once no editor runs', () => {
    const running = serverView(recordOf({
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'beta', uid: '5f0c0000-0000-4000-8000-000000000002' },
      spec: { running: true },
      status: { phase: 'Running', runtimeRef: { kind: 'process', pid: 4242, startTicks: 7 }, port: 8011, startTime },
    }), undefined);
    expect(running).toMatchObject({ pid: 4242, start_time: startTime });
    const stopped = serverView(recordOf({
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'beta', uid: '5f0c0000-0000-4000-8000-000000000002' },
      spec: { running: false },
      status: { phase: 'Stopped', runtimeRef: null, port: 8011, startTime },
    }), undefined);
    expect(stopped).toMatchObject({ pid: null, start_time: null, uptime: 0 });
  });

  it('shows spec.resources as the manifest gives them, null without', () => {
    const resources = { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '4Gi' } };
    const server: EditorServer = {
      apiVersion: API_VERSION, kind: KIND,
      metadata: { name: 'gamma', uid: '5f0c0000-0000-4000-8000-000000000003' },
      spec: { running: false, resources },
    };
    expect(serverView(recordOf(server), undefined).resources).toEqual(resources);
    expect(serverView(recordOf({ ...server, spec: { running: false } }), undefined).resources).toBeNull();
  });
});
