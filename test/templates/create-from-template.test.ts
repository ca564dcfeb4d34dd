// POST /servers/create-from-template against the running service: the new server gets the
// template's extensions, groups, settings and workspace source (a git repository served on
// loopback, or a ZIP from the templates folder), and its manifest says which template and which
// version of it it came from. Unknown ids, wrong tabs, unknown groups and hostile archives are refused.
import { createHash } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { storeTemplateArchive, TemplateArchiveError } from '../../src/templates/archive.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';
import { makeRepo, serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { writeTemplate, writeWhole } from './fixtures.ts';

let service: TestService;
let daemon: GitDaemon;
let repos: string;
let dir: string;
const starter = buildZip([
  { name: 'starter/README.md', data: '# starter\n' },
  { name: 'starter/notebooks/explore.py', data: 'print("explore")\n' },
]);

beforeAll(async () => {
  repos = await fs.mkdtemp(join(tmpdir(), 'devbox-template-repos-'));
  await makeRepo(repos, 'project');
  daemon = await serveGitDaemon(repos);
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-templates-'));
  dir = join(root, 'templates');
  await fs.mkdir(join(dir, 'archives'), { recursive: true });
  await fs.writeFile(join(dir, 'archives', 'starter.zip'), starter);
  await writeTemplate(dir, 'cloned', {
    name: 'Cloned project', tab: 'Starters',
    spec: {
      extensionGroups: ['git'], extensions: ['redhat.vscode-yaml'], settings: { 'editor.fontSize': 15 }, restartPolicy: 'OnFailure',
      workspace: { source: { git: { url: daemon.url('project'), ref: 'feature' } } },
    },
  });
  await writeTemplate(dir, 'zipped', { name: 'Zipped starter', tab: 'Data', spec: { workspace: { source: { archive: { path: 'archives/starter.zip' } } } } });
  await writeTemplate(dir, 'ungrouped', { tab: 'Data', spec: { extensionGroups: ['git', 'no-such-group'] } });
  service = await startTestService({ root, templatesDir: dir });
});
afterAll(async () => {
  await service?.stop();
  await daemon?.stop();
  await fs.rm(repos, { recursive: true, force: true });
});

const create = (body: Record<string, unknown>) => service.request('POST', '/servers/create-from-template', body);
const manifestOf = async (name: string) => parse(await fs.readFile(join(service.settings.manifestsDir, `${name}.yaml`), 'utf8'));
const versionOf = async (id: string) => createHash('sha256').update(await fs.readFile(join(dir, `${id}.yaml`))).digest('hex').slice(0, 12);

describe('POST /servers/create-from-template', () => {
  it('makes a server with the template\'s git source, extensions, groups and settings, annotated with its id and version', async () => {
    const { status, body } = await create({ name: 'From git', template_id: 'cloned' });
    expect(status).toBe(201);
    expect(Object.keys(body).sort()).toEqual(['extensions', 'id', 'name', 'pid', 'port', 'status', 'workspace_path']);
    expect(body).toMatchObject({ name: 'From git', extensions: ['redhat.vscode-yaml'], pid: null });

    // The workspace gets the repository's files, from the ref the template names.
    await eventually(() => existsSync(join(body.workspace_path, 'notes.txt')), 20_000);
    expect(await fs.readFile(join(body.workspace_path, 'README.md'), 'utf8')).toBe('# project\n');

    const manifest = await manifestOf('from-git');
    expect(manifest.metadata.annotations).toEqual({ 'devbox.dev/template': 'cloned', 'devbox.dev/template-version': await versionOf('cloned') });
    expect(manifest.spec).toMatchObject({
      displayName: 'From git', running: false, restartPolicy: 'OnFailure',
      extensionGroups: ['git'], extensions: ['redhat.vscode-yaml'], settings: { 'editor.fontSize': 15 },
      workspace: { source: { git: { url: daemon.url('project'), ref: 'feature' } } },
    });

    const started = await service.request('POST', `/servers/${body.id}/start`);
    expect(started.status).toBe(200);
    expect(started.body.data.status).toBe('running');
    expect(processExists(started.body.data.pid)).toBe(true);
    // The group's extension and the template's own were installed; the settings written.
    const record = (await service.request('GET', `/servers/${body.id}`)).body;
    expect(record.extension_status.map((e: { id: string }) => e.id).sort()).toEqual(['eamodio.gitlens', 'redhat.vscode-yaml']);
    const settings = JSON.parse(await fs.readFile(join(service.settings.dataDir, 'editors', 'from-git', 'user-data', 'User', 'settings.json'), 'utf8'));
    expect(settings).toMatchObject({ 'editor.fontSize': 15, 'git.autofetch': true });
  });

  it('copies a template\'s archive into the archive store by its sha256 and extracts it into the workspace', async () => {
    const { status, body } = await create({ name: 'From zip', template_id: 'zipped', tab_name: 'Data' });
    expect(status).toBe(201);
    await eventually(() => existsSync(join(body.workspace_path, 'notebooks', 'explore.py')), 15_000);
    expect(await fs.readFile(join(body.workspace_path, 'README.md'), 'utf8')).toBe('# starter\n');
    const sha256 = createHash('sha256').update(starter).digest('hex');
    const manifest = await manifestOf('from-zip');
    expect(manifest.spec.workspace).toEqual({ source: { archive: { sha256 } } });
    expect(manifest.metadata.annotations['devbox.dev/template']).toBe('zipped');
    expect(await fs.readFile(join(service.settings.dataDir, 'archives', `${sha256}.zip`))).toEqual(starter);
    // The copy was moved into the store: nothing is left among the uploads.
    expect((await fs.readdir(join(service.settings.dataDir, 'uploads'))).filter((f) => f.startsWith('template-'))).toEqual([]);
  });

  it('answers 404 listing the known ids for an unknown template, and writes nothing', async () => {
    const before = await fs.readdir(service.settings.manifestsDir);
    const { status, body } = await create({ name: 'Nothing', template_id: 'no-such-template' });
    expect(status).toBe(404);
    expect(body).toMatchObject({ status: 'error', error: { code: 'TEMPLATE_NOT_FOUND' } });
    expect(body.error.message).toMatch(/no template has the id "no-such-template": the known ids are cloned, ungrouped, zipped/);
    expect(await fs.readdir(service.settings.manifestsDir)).toEqual(before);
  });

  it('takes tab_name when it is the template\'s tab, and otherwise says which tab the template is in', async () => {
    const wrong = await create({ name: 'Wrong tab', template_id: 'zipped', tab_name: 'Starters' });
    expect(wrong.status).toBe(404);
    expect(wrong.body.error.message).toMatch(/template "zipped" is in the tab "Data", not "Starters"/);
    const right = await create({ name: 'Right tab', template_id: 'cloned', tab_name: 'Starters' });
    expect(right.status).toBe(201);
  });

  it('refuses a template naming an extension group the config does not define, saying which', async () => {
    const { status, body } = await create({ name: 'Ungrouped', template_id: 'ungrouped' });
    expect(status).toBe(409);
    expect(body.error.code).toBe('UNKNOWN_EXTENSION_GROUP');
    expect(body.error.message).toMatch(/"no-such-group"; the config defines python, jupyter, databricks, claude-code, git/);
    expect(existsSync(join(service.settings.manifestsDir, 'ungrouped.yaml'))).toBe(false);
  });

  it('checks the request like POST /servers', async () => {
    expect((await create({ name: '   ', template_id: 'cloned' })).status).toBe(400);
    expect((await create({ template_id: 'cloned' })).status).toBe(400);
    const extra = await create({ name: 'x', template_id: 'cloned', port: 9000 });
    expect(extra.status).toBe(400);
    expect(extra.body.error.message).toMatch(/unknown field "port"|must NOT have additional properties/);
  });

  it('refuses a template whose file is invalid, or whose archive became a link out of the folder', async () => {
    const outside = join(service.root, 'outside');
    await fs.mkdir(outside, { recursive: true });
    await fs.writeFile(join(outside, 'secret.zip'), buildZip([{ name: 'secret.txt', data: 'secret' }]));
    await writeTemplate(dir, 'escaping', { spec: { workspace: { source: { archive: { path: 'archives/secret.zip' } } } } });
    await fs.symlink(join(outside, 'secret.zip'), join(dir, 'archives', 'secret.zip'));
    const refused = await eventually(async () => {
      const answer = await create({ name: 'Escaping', template_id: 'escaping' });
      return answer.status === 409 && answer;
    });
    expect(refused.body.error.code).toBe('TEMPLATE_INVALID');
    expect(refused.body.error.message).toMatch(/escaping\.yaml:\d+:\d+: spec\.workspace\.source\.archive\.path: "archives\/secret\.zip" is a symbolic link/);
    expect(existsSync(join(service.settings.manifestsDir, 'escaping.yaml'))).toBe(false);

    await writeWhole(join(dir, 'escaping.yaml'), 'apiVersion: [\n');
    await eventually(async () => /escaping\.yaml:\d+:\d+/.test((await create({ name: 'Escaping', template_id: 'escaping' })).body.error.message));
  });

  it('copies an archive only from inside the templates folder: no "..", no absolute path, no link, a ZIP within the size limit', async () => {
    const layout = new DataLayout(service.settings.dataDir);
    const context = { dir, gitSchemes: ['git'], maxArchiveBytes: 1024 * 1024 };
    await fs.mkdir(join(dir, 'archives', 'deep'), { recursive: true });
    await fs.symlink(join(service.root, 'outside'), join(dir, 'archives', 'deep', 'up'));
    for (const [path, problem] of [
      ['../outside/secret.zip', /goes up with "\.\."/],
      [join(service.root, 'outside', 'secret.zip'), /is absolute/],
      ['archives/secret.zip', /symbolic link, which is never followed/],
      ['archives/deep/up/secret.zip', /leads out of the templates folder/],
      ['archives/missing.zip', /is not in the templates folder/],
    ] as const) {
      await expect(storeTemplateArchive(context, layout, path), path).rejects.toThrow(TemplateArchiveError);
      await expect(storeTemplateArchive(context, layout, path), path).rejects.toThrow(problem);
    }
    await fs.writeFile(join(dir, 'archives', 'big.zip'), Buffer.alloc(2 * 1024 * 1024));
    await expect(storeTemplateArchive(context, layout, 'archives/big.zip')).rejects.toThrow(/larger than 1 MiB/);
    await fs.writeFile(join(dir, 'archives', 'not-a-zip.zip'), 'hello');
    await expect(storeTemplateArchive(context, layout, 'archives/not-a-zip.zip')).rejects.toThrow(/is not an archive the service extracts/);
  });
});
