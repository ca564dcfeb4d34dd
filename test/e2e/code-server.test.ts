// End to end with the real code-server that `npm install` put in the cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { checkHealth } from '../../src/runtime/health.ts';
import { groupExists } from '../../src/core/procfs.ts';
import { processExists, runningEditors, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  // The real editor: DEVBOX_EDITOR_BIN if set, else the installed copy, else PATH.
  const editor = resolveEditorBinary();
  service = await startTestService({
    editorBin: editor.path,
    config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
  });
  // A shell or platform that sets PORT (here to the service's own): code-server obeys it over
  // --bind-addr, so the editors must not inherit it.
  process.env.PORT = new URL(service.url).port;
});
afterAll(async () => {
  delete process.env.PORT;
  await service?.stop();
});

describe('the real code-server', () => {
  it('is created, started, answers /healthz on its port, and stops leaving no process', async () => {
    const created = await service.request('POST', '/servers', { name: 'Real editor' });
    expect(created.status).toBe(201);
    const { id, port } = created.body;

    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const pid = started.body.data.pid;
    expect(processExists(pid)).toBe(true);
    const health = await checkHealth(port, 10_000);
    expect(health.ok).toBe(true);
    expect(['alive', 'expired']).toContain(health.state);
    expect(service.lines.join('\n')).toContain('code-server-');

    const stopped = await service.request('POST', `/servers/${id}/stop`);
    expect(stopped.body.data).toMatchObject({ status: 'stopped', pid: null });
    expect(groupExists(pid)).toBe(false);
    expect(runningEditors(service.settings.dataDir)).toEqual([]);
    expect((await checkHealth(port)).ok).toBe(false);
  }, 120_000);
});
