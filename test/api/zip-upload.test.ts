// ZIP uploads through create-with-workspace and clone-workspace: streamed to disk, kept by
// sha256, extracted by the controller; hostile or oversized uploads are refused with 4xx and
// nothing is written, and the service keeps answering.
import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { postForm as submitForm } from '../helpers/form.ts';

let service: TestService;

beforeAll(async () => {
  // 1 MB here (100 MB by default), so the oversized upload stays small.
  service = await startTestService({ config: { workspace: { maxUploadMb: 1, cloneTimeoutSeconds: 60 } } });
});
afterAll(async () => {
  await service?.stop();
});

const postForm = (path: string, fields: Record<string, string>, zip?: Buffer) => submitForm(service.url + path, fields, zip);

const manifestFiles = async () => (await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml'));
const uploads = async () => (existsSync(join(service.settings.dataDir, 'uploads')) ? fs.readdir(join(service.settings.dataDir, 'uploads')) : []);

describe('zip_file uploads', () => {
  it('creates a server whose workspace holds the ZIP, kept by its sha256', async () => {
    const zip = buildZip([{ name: 'project/README.md', data: '# zipped\n' }, { name: 'project/src/app.py', data: 'print(1)\n' }]);
    const sha256 = createHash('sha256').update(zip).digest('hex');
    const { status, body } = await postForm('/servers/create-with-workspace', { name: 'Zipped', extensions: '[]' }, zip);
    expect(status).toBe(201);
    expect(body.status).toBe('stopped');
    expect((await fs.readdir(body.workspace_path)).sort()).toEqual(['README.md', 'src']);
    expect(await fs.readFile(join(body.workspace_path, 'README.md'), 'utf8')).toBe('# zipped\n');
    expect((await fs.stat(join(body.workspace_path, 'src', 'app.py'))).mode & 0o777).toBe(0o600);
    const manifest = parse(await fs.readFile(join(service.settings.manifestsDir, 'zipped.yaml'), 'utf8'));
    expect(manifest.spec.workspace.source).toEqual({ archive: { sha256 } });
    expect(await fs.readFile(join(service.settings.dataDir, 'archives', `${sha256}.zip`))).toEqual(zip);
    expect(await uploads()).toEqual([]);
  });

  it('fills an existing server\'s empty workspace through clone-workspace', async () => {
    const created = (await service.request('POST', '/servers', { name: 'Later' })).body;
    const { status, body } = await postForm(`/servers/${created.id}/clone-workspace`, {}, buildZip([{ name: 'a.txt', data: 'a' }, { name: 'b.txt', data: 'b' }]));
    expect(status).toBe(200);
    expect(body.message).toMatch(/extracted from the uploaded ZIP/);
    expect((await fs.readdir(created.workspace_path)).sort()).toEqual(['a.txt', 'b.txt']);
  });

  it.each([
    ['zip slip', [{ name: 'AA/escaped.txt', rawName: '../escaped.txt', data: 'x' }], /climbs out/],
    ['a symlink', [{ name: 'link', data: '/etc', mode: 0o120777 }], /symbolic link/],
    ['a ZIP bomb', [{ name: 'zeros.bin', data: Buffer.alloc(20 * 1024 * 1024) }], /ZIP bomb/],
  ])('refuses %s with 400 INVALID_ARCHIVE and writes nothing', async (_what, entries, problem) => {
    const before = await manifestFiles();
    const { status, body } = await postForm('/servers/create-with-workspace', { name: 'Hostile zip' }, buildZip(entries));
    expect(status).toBe(400);
    expect(body.error.code).toBe('INVALID_ARCHIVE');
    expect(body.error.message).toMatch(problem);
    expect(await manifestFiles()).toEqual(before);
    expect(existsSync(join(service.settings.dataDir, 'workspaces', 'escaped.txt'))).toBe(false);
    expect(existsSync(join(service.settings.dataDir, 'workspaces', 'hostile-zip'))).toBe(false);
    await eventually(async () => (await uploads()).length === 0);
  });

  it('refuses an upload over the limit with 413 while it arrives, keeps nothing and goes on answering', async () => {
    const before = await manifestFiles();
    const { status, body } = await postForm('/servers/create-with-workspace', { name: 'Too big' }, Buffer.alloc(3 * 1024 * 1024, 7));
    expect(status).toBe(413);
    expect(body.error.code).toBe('UPLOAD_TOO_LARGE');
    expect(body.error.message).toMatch(/larger than 1 MB \(workspace\.maxUploadMb in the config\)/);
    expect(await manifestFiles()).toEqual(before);
    await eventually(async () => (await uploads()).length === 0);
    expect((await service.request('GET', '/health')).status).toBe(200);
  });

  it('makes a hand-written manifest naming an archive that is not there Failed, saying what to do', async () => {
    await fs.writeFile(join(service.settings.manifestsDir, 'lost.yaml'), [
      'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: lost }', 'spec:', '  running: true',
      `  workspace: { source: { archive: { sha256: "${'0'.repeat(64)}" } } }`, ''].join('\n'));
    const status = await eventually(async () => {
      const s = parse(await fs.readFile(join(service.settings.dataDir, 'status', 'lost.yaml'), 'utf8')).status;
      return s.phase === 'Failed' ? s : undefined;
    });
    expect(status.reason).toBe('WorkspaceSourceInvalid');
    expect(status.message).toMatch(/is not in .*archives.*: upload the ZIP again/);
  });
});
