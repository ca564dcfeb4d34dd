// generation counts spec changes whoever made them; observed_generation follows only once the
// controller has finished acting on one.
import { promises as fs } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService | undefined;
afterEach(async () => {
  delete process.env.STUB_IGNORE_SIGTERM;
  await service?.stop();
  service = undefined;
});

describe('generation and observed_generation', () => {
  it('bumps generation on a hand edit at once, and moves observed_generation only when the editor is stopped', async () => {
    // The stop takes the whole 2 s grace: long enough to look at the server in the middle of it.
    process.env.STUB_IGNORE_SIGTERM = '1';
    service = await startTestService({ config: { editor: { stopGraceSeconds: 2 } } });
    const { id } = (await service.request('POST', '/servers', { name: 'Counted' })).body;
    await service.request('POST', `/servers/${id}/start`);
    const running = (await service.request('GET', `/servers/${id}`)).body;
    expect(running.status).toBe('running');
    expect(running.observed_generation).toBe(running.generation);

    const file = `${service.settings.manifestsDir}/${running.manifest}.yaml`;
    const text = await fs.readFile(file, 'utf8');
    await fs.writeFile(file, text.replace('running: true', 'running: false'));

    const stopping = await eventually(async () => {
      const s = (await service!.request('GET', `/servers/${id}`)).body;
      return s.phase === 'Stopping' ? s : undefined;
    }, 5000, 20);
    expect(stopping.generation).toBe(running.generation + 1);
    expect(stopping.observed_generation).toBe(running.generation);

    const stopped = await eventually(async () => {
      const s = (await service!.request('GET', `/servers/${id}`)).body;
      return s.status === 'stopped' ? s : undefined;
    }, 10_000, 20);
    expect(stopped.observed_generation).toBe(running.generation + 1);
    expect(stopped.generation).toBe(running.generation + 1);
    // The controller wrote nothing into the operator's file.
    expect(await fs.readFile(file, 'utf8')).toBe(text.replace('running: true', 'running: false'));
  }, 30_000);
});
