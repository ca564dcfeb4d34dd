// An editor that ignores SIGTERM is not left running: after the stop grace its whole process
// group gets SIGKILL.
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService | undefined;
afterEach(async () => {
  delete process.env.STUB_IGNORE_SIGTERM;
  delete process.env.STUB_CHILD;
  await service?.stop();
  service = undefined;
});

/** True while any process is in the group led by `pid`. */
function groupExists(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('stopping an editor that ignores SIGTERM', () => {
  it('kills its whole process group with SIGKILL once the grace has passed, and not before', async () => {
    process.env.STUB_IGNORE_SIGTERM = '1';
    process.env.STUB_CHILD = '1'; // a child in the group, as code-server has
    service = await startTestService({ config: { editor: { stopGraceSeconds: 1 } } });
    const { id } = (await service.request('POST', '/servers', { name: 'Stubborn' })).body;
    const { pid } = (await service.request('POST', `/servers/${id}/start`)).body.data;
    expect(groupExists(pid)).toBe(true);

    const started = performance.now();
    const stopped = await service.request('POST', `/servers/${id}/stop`);
    const took = performance.now() - started;
    expect(stopped.status, JSON.stringify(stopped.body)).toBe(200);
    expect(stopped.body.data).toMatchObject({ status: 'stopped', pid: null });
    expect(took).toBeGreaterThanOrEqual(1000);
    // The leader is gone when the stop answers; a child killed with it may linger a moment as a
    // zombie until init reaps it (kill -0 still finds the group then).
    await eventually(() => !groupExists(pid), 5000);
    // It really did ignore SIGTERM: it said so in its output before it was killed.
    await eventually(async () => ((await service!.request('GET', `/servers/${id}/logs?lines=200`)).body.data.logs as string[])
      .some((line) => line.includes('ignoring SIGTERM')));
  }, 30_000);
});
