// Extensions follow the manifest, checked against the real code-server with .vsix files built by
// the test and found through DEVBOX_VSIX_DIR (no marketplace needed): added ones are installed,
// removed ones uninstalled, also while the editor runs, and one that cannot be had fails alone.
import { promises as fs, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';
import { buildVsix } from './vsix.ts';

const bin = resolveEditorBinary().path;
let service: TestService;

beforeAll(async () => {
  const vsixDir = await fs.mkdtemp(join((await import('node:os')).tmpdir(), 'devbox-vsix-'));
  buildVsix(join(vsixDir, 'acme.one-1.0.0.vsix'), 'acme', 'one', '1.0.0');
  buildVsix(join(vsixDir, 'acme.two-2.0.0.vsix'), 'acme', 'two', '2.0.0');
  process.env.DEVBOX_VSIX_DIR = vsixDir;
  service = await startTestService({
    editorBin: bin,
    config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 } },
  });
  delete process.env.DEVBOX_VSIX_DIR;
  (service as { vsixDir?: string }).vsixDir = vsixDir;
});
afterAll(async () => {
  await service?.stop();
  const dir = (service as { vsixDir?: string } | undefined)?.vsixDir;
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

async function listed(name: string): Promise<string[]> {
  const editor = join(service.settings.dataDir, 'editors', name);
  const { stdout } = await execa(bin, ['--config', join(editor, 'config.yaml'), '--extensions-dir', join(editor, 'extensions'),
    '--user-data-dir', join(editor, 'user-data'), '--list-extensions', '--show-versions']);
  return stdout.split('\n').filter(Boolean).sort();
}

it('installs, and uninstalls while the editor runs, what the manifest names; an id that cannot be had fails alone', async () => {
  const created = await service.request('POST', '/servers', { name: 'Decl', extensions: ['acme.one'] });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const { id } = created.body;
  await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.extension_status?.[0]?.state === 'Installed', 60_000);
  expect(await listed('decl')).toEqual(['acme.one@1.0.0']);

  const started = await service.request('POST', `/servers/${id}/start`);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const pid = started.body.data.pid;

  // By hand, while it runs: acme.one goes, acme.two and an id no marketplace can give come.
  const file = join(service.settings.manifestsDir, 'decl.yaml');
  const manifest = parse(readFileSync(file, 'utf8'));
  manifest.spec.extensions = ['acme.two', 'nosuch.unreachable-thing'];
  await fs.writeFile(file, stringify(manifest));

  const record = await eventually(async () => {
    const body = (await service.request('GET', `/servers/${id}`)).body;
    return body.extension_status?.length === 2 && !body.extension_status.some((e: { id: string }) => e.id === 'acme.one') ? body : undefined;
  }, 90_000);
  expect(record.extension_status).toEqual([
    { id: 'acme.two', state: 'Installed' },
    expect.objectContaining({ id: 'nosuch.unreachable-thing', state: 'Failed', message: expect.stringMatching(/\S/) }),
  ]);
  expect(await listed('decl')).toEqual(['acme.two@2.0.0']);
  // The editor kept running the whole time; status says why the extensions are not in use yet.
  expect(record).toMatchObject({ status: 'running', pid });
  expect(processExists(pid)).toBe(true);
  const status = parse(readFileSync(join(service.settings.dataDir, 'status', 'decl.yaml'), 'utf8')).status;
  expect(status.conditions.find((c: { type: string }) => c.type === 'ExtensionsInstalled')).toMatchObject({ status: 'False', reason: 'InstallFailed' });

  // Dropping the failed id leaves the reload notice.
  manifest.spec.extensions = ['acme.two'];
  await fs.writeFile(file, stringify(manifest));
  await eventually(() => {
    const s = parse(readFileSync(join(service.settings.dataDir, 'status', 'decl.yaml'), 'utf8')).status;
    return s.conditions.find((c: { type: string }) => c.type === 'ExtensionsInstalled')?.reason === 'ReloadRequired';
  }, 30_000);
}, 180_000);

it('installs a .vsix the manifest names by path, and uninstalls it when the path goes, leaving the user\'s own', async () => {
  const vsix = join((service as { vsixDir?: string }).vsixDir!, 'elsewhere', 'three.vsix');
  await fs.mkdir(join(vsix, '..'), { recursive: true });
  buildVsix(vsix, 'acme', 'three', '3.0.0');
  const file = join(service.settings.manifestsDir, 'bypath.yaml');
  const write = (extensions: string[]) => fs.writeFile(file, stringify({
    apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name: 'bypath' }, spec: { running: false, extensions },
  }));
  const statusOf = () => {
    try {
      return parse(readFileSync(join(service.settings.dataDir, 'status', 'bypath.yaml'), 'utf8')).status;
    } catch {
      return undefined;
    }
  };
  await write([vsix]);
  await eventually(() => statusOf()?.phase === 'Stopped' && statusOf()?.extensions?.[0]?.state === 'Installed', 60_000);
  expect(statusOf().extensions).toEqual([{ id: vsix, state: 'Installed' }]);
  expect(await listed('bypath')).toEqual(['acme.three@3.0.0']);

  // One the user installs by hand is theirs: the controller leaves it.
  const editor = join(service.settings.dataDir, 'editors', 'bypath');
  await execa(bin, ['--config', join(editor, 'config.yaml'), '--extensions-dir', join(editor, 'extensions'),
    '--user-data-dir', join(editor, 'user-data'), '--install-extension', join((service as { vsixDir?: string }).vsixDir!, 'acme.two-2.0.0.vsix')]);
  await write([]);
  await eventually(async () => JSON.stringify(await listed('bypath')) === JSON.stringify(['acme.two@2.0.0']), 60_000);
  await eventually(() => statusOf()?.phase === 'Stopped' && statusOf()?.extensions === undefined, 30_000);
}, 120_000);
