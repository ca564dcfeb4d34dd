// Cost follows activity: once every server is known, a fleet with nothing happening is not
// reconciled again (no timer walks it), and a missed file event is still caught by the folder's
// listing, without reading any manifest.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { FolderWatch } from '../../src/manifests/folder-watch.ts';

let service: TestService | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  vi.useRealTimers();
  await service?.stop();
  service = undefined;
});

const manifest = (name: string) =>
  `apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: ${name}\nspec:\n  displayName: Seat ${name}\n  running: false\n`;

interface Listed { id: string; manifest: string; status: string }

it('reconciles no server of a fleet at rest, running or stopped, while the service samples and serves', async () => {
  service = await startTestService();
  const names = Array.from({ length: 40 }, (_, i) => `seat-${i}`);
  // Landed whole, as a checkout lands files (a write in place is two events, the second maybe late).
  const staging = join(service.root, 'staging');
  await fs.mkdir(staging);
  for (const name of names) await fs.writeFile(join(staging, `${name}.yaml`), manifest(name));
  for (const name of names) await fs.rename(join(staging, `${name}.yaml`), join(service.settings.manifestsDir, `${name}.yaml`));
  const created = await service.request('POST', '/servers', { name: 'Runs' });
  expect((await service.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
  const list = () => service!.request('GET', '/servers').then((r) => r.body as Listed[]);
  await eventually(async () => {
    const all = await list();
    return all.length === 41 && all.filter((s) => s.status === 'stopped').length === 40 && all.some((s) => s.status === 'running');
  }, 20_000);
  // Settled: the running editor's memory is sampled, so its last status commit is behind it.
  await eventually(async () => (await list()).find((s) => s.id === created.body.id && (s as { memory_mb?: number }).memory_mb! > 0));

  const reconciled: string[] = [];
  const stop = service.index.on('reconciled', ({ name }) => reconciled.push(name));
  // The window: ten samples of the editors' usage (every 0.5 s here) and the reads a dashboard makes.
  let samples = 0;
  const counted = service.stats.onSample(() => samples++);
  await eventually(async () => {
    await list();
    return samples >= 10;
  }, 20_000);
  stop();
  counted();
  expect(reconciled).toEqual([]);
});

it('finds a manifest whose file event was lost by the folder\'s listing, within its period', async () => {
  // The watcher misses nothing here, so the event is taken away: only the listing can find the file.
  service = await startTestService();
  vi.spyOn(FolderWatch.prototype as unknown as { onFileEvent(path: string): Promise<void> }, 'onFileEvent').mockImplementation(async () => undefined);
  await fs.writeFile(join(service.settings.manifestsDir, 'late.yaml'), manifest('late'));
  const before = performance.now();
  await eventually(async () => ((await service!.request('GET', '/servers')).body as Listed[]).some((s) => s.manifest === 'late' && s.status === 'stopped'), 45_000, 200);
  // The folder is listed every 30 s; the resync (an hour) could not have found it.
  expect(performance.now() - before).toBeLessThan(40_000);
}, 60_000);
