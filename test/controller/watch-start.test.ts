// A manifest written while the controller starts (after its first listing, before its watcher
// is ready) is acted on at once, not left to the next resync.
import { promises as fs } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManifestStore } from '../../src/manifests/store.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await service?.stop();
  service = undefined;
});

const MANIFEST = `apiVersion: devbox.dev/v1alpha1
kind: EditorServer
metadata:
  name: early-bird
spec:
  displayName: Early bird
  running: false
`;

describe('starting the controller', () => {
  it('acts on a manifest written between its first listing and its watcher being ready, well before a resync', async () => {
    const realList = ManifestStore.prototype.list;
    let written: number | undefined;
    // The file lands the moment the first listing has been taken.
    vi.spyOn(ManifestStore.prototype, 'list').mockImplementation(async function (this: ManifestStore) {
      const names = await realList.call(this);
      if (written === undefined) {
        await fs.writeFile(this.fileOf('early-bird'), MANIFEST);
        written = performance.now();
      }
      return names;
    });
    // A resync would find it after 60 s: the test must not be passed by that.
    service = await startTestService({ config: { controller: { resyncSeconds: 60 } } });
    expect(written).toBeDefined();
    const record = await eventually(async () => {
      const list = (await service!.request('GET', '/servers')).body as Array<{ manifest: string; status: string }>;
      return list.find((s) => s.manifest === 'early-bird' && s.status === 'stopped');
    }, 5000, 20);
    expect(record).toMatchObject({ name: 'Early bird' });
    expect(performance.now() - written!).toBeLessThan(5000);
  }, 20_000);
});
