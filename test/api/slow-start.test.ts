// A start that outlasts the API's bounded wait answers 202, and the editor still comes up.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    config: {
      editor: { startTimeoutSeconds: 1, readyTimeoutSeconds: 1.5 },
      // No periodic resync: it would find the late editor answering and correct the status before the refresh does.
      controller: { resyncSeconds: 3600 },
    },
  });
});
afterAll(async () => {
  await service?.stop();
});

describe('a slow editor start', () => {
  it('answers 202 with the current record while the editor is still starting', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'Slow' })).body;
    process.env.STUB_START_DELAY_MS = '1800';
    const started = await service.request('POST', `/servers/${id}/start`).finally(() => delete process.env.STUB_START_DELAY_MS);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ status: 'success', data: { id, status: 'starting' } });
    expect(typeof started.body.data.pid).toBe('number');
    expect(started.body.message).toMatch(/still starting/);
    // The probe gave up after 1.5 s: the server is reported unhealthy, not silently stuck.
    const failed = await eventually(async () => {
      const s = (await service.request('GET', `/servers/${id}`)).body;
      return s.status === 'failed' ? s : undefined;
    });
    expect(failed.reason).toBe('Unhealthy');
    // A refresh finds the editor answering by now and corrects the status.
    const refreshed = await eventually(async () => {
      const r = (await service.request('POST', `/servers/${id}/refresh-status`)).body;
      return r.new_status === 'running' ? r : undefined;
    });
    expect(refreshed).toMatchObject({ old_status: 'failed', updated: true });
  });

  it('removes the server\'s logs with it on delete', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'Removed' })).body;
    const logsDir = `${service.settings.dataDir}/logs/removed`;
    // Its folder is made when its editor is launched (a server that never ran holds its lines in memory).
    await service.request('POST', `/servers/${id}/start`);
    await eventually(() => existsSync(`${logsDir}/server.log`));
    expect((await service.request('DELETE', `/servers/${id}`)).status).toBe(200);
    expect(existsSync(logsDir)).toBe(false);
  });
});
