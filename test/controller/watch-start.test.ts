// A manifest written while the controller starts (after its first listing, before its watcher
// is ready) is acted on at once, not left to the next resync.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
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

describe('starting after a crash in the middle of a spec write', () => {
  it('puts back a manifest the crashed write had moved aside, instead of removing it as a leftover', async () => {
    const root = await fs.mkdtemp(`${tmpdir()}/devbox-aside-`);
    await fs.mkdir(`${root}/manifests`);
    // What a write leaves when the service dies after moving the file aside and before putting
    // the new text in place: no manifest, and the operator's text in a hidden file.
    await fs.writeFile(`${root}/manifests/.early-bird.yaml.0a1b2c3d.aside`, MANIFEST);
    await fs.writeFile(`${root}/manifests/.early-bird.yaml.4e5f6a7b.tmp`, MANIFEST.replace('Early bird', 'half-written'));
    service = await startTestService({ root });
    expect(await fs.readFile(`${root}/manifests/early-bird.yaml`, 'utf8')).toBe(MANIFEST);
    expect((await fs.readdir(`${root}/manifests`)).filter((f) => f !== '.devbox-controller.lock')).toEqual(['early-bird.yaml']);
    await eventually(async () => ((await service!.request('GET', '/servers')).body as Array<{ manifest: string }>)
      .some((s) => s.manifest === 'early-bird'));
  });
});
