// GET /templates against the running service: templates read from files, grouped by tab, kept
// current as files are added, changed and removed; an invalid or hostile file is reported with its
// name and line (also in GET /health) while the others stay listed and the service stays up.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import { MODELINE, templateText, writeTemplate, writeWhole } from './fixtures.ts';

let service: TestService;
let dir: string;

const templates = async () => (await service.request('GET', '/templates')).body;
const ids = async () => (await templates()).data.tabs.flatMap((t: { items: Array<{ id: string }> }) => t.items.map((i) => i.id));
const errorsOf = async (file: string) => ((await templates()).errors ?? []).filter((e: { file: string }) => e.file === file);

beforeAll(async () => {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-templates-'));
  dir = join(root, 'templates');
  await fs.mkdir(dir);
  await writeTemplate(dir, 'notebooks', {
    name: 'Notebooks', tab: 'Data', description: 'Jupyter notebooks',
    gallery: {
      thumbnailUrl: 'https://example.com/notebooks.png', githubUrl: 'https://github.com/team/notebooks',
      iconLinks: [{ lucideIcon: 'notebook', url: 'https://jupyter.org/' }],
    },
    spec: { extensionGroups: ['python', 'jupyter'], extensions: ['mechatroner.rainbow-csv'], settings: { 'editor.fontSize': 14 }, restartPolicy: 'OnFailure' },
  });
  await writeTemplate(dir, 'analytics', { name: 'Analytics', tab: 'Data', spec: { workspace: { source: { git: { url: 'https://github.com/team/analytics.git', ref: 'main' } } } } });
  await writeTemplate(dir, 'frontend', { name: 'Front end', tab: 'Web', spec: { extensions: ['dbaeumer.vscode-eslint'] } });
  // Not templates: ignored.
  await fs.writeFile(join(dir, 'README.md'), '# templates\n');
  await fs.writeFile(join(dir, '.hidden.yaml'), 'not: a template\n');
  service = await startTestService({ root, templatesDir: dir });
});
afterAll(async () => {
  await service?.stop();
});

describe('GET /templates', () => {
  it('lists the templates of the folder by tab, in a stable order, with the interface fields', async () => {
    const { status } = await service.request('GET', '/templates');
    expect(status).toBe(200);
    const body = await templates();
    expect(body.status).toBe('success');
    expect(body.errors).toBeUndefined();
    expect(body.data.tabs.map((t: { name: string }) => t.name)).toEqual(['Data', 'Web']);
    expect(body.data.tabs[0].items.map((i: { id: string }) => i.id)).toEqual(['analytics', 'notebooks']);
    const text = await fs.readFile(join(dir, 'notebooks.yaml'));
    expect(body.data.tabs[0].items[1]).toEqual({
      id: 'notebooks',
      name: 'Notebooks',
      description: 'Jupyter notebooks',
      tab: 'Data',
      extension_groups: ['python', 'jupyter'],
      extensions_groups: ['python', 'jupyter'],
      extensions: ['mechatroner.rainbow-csv'],
      settings: { 'editor.fontSize': 14 },
      restart_policy: 'OnFailure',
      thumbnail_url: 'https://example.com/notebooks.png',
      github_url: 'https://github.com/team/notebooks',
      icon_links: [{ lucide_icon: 'notebook', url: 'https://jupyter.org/' }],
      version: createHash('sha256').update(text).digest('hex').slice(0, 12),
      workspace_source: null,
    });
    expect(body.data.tabs[0].items[0]).toMatchObject({
      thumbnail_url: null, github_url: null, icon_links: [], extension_groups: [],
      workspace_source: { type: 'git', url: 'https://github.com/team/analytics.git', ref: 'main' },
    });
    const health = (await service.request('GET', '/health')).body;
    expect(health.templates).toEqual({ folder: dir, exists: true, count: 3, errors: [] });
  });

  it('shows a file added, changed and removed while the service runs', async () => {
    await writeTemplate(dir, 'scratch', { name: 'Scratch', tab: 'Aaa' });
    await eventually(async () => (await ids()).includes('scratch'));
    expect((await templates()).data.tabs[0].name).toBe('Aaa');

    const versionOf = async () => (await templates()).data.tabs.flatMap((t: { items: unknown[] }) => t.items).find((i: { id: string }) => i.id === 'scratch');
    const before = await versionOf();
    await writeTemplate(dir, 'scratch', { name: 'Scratch pad', tab: 'Aaa', spec: { extensions: ['redhat.vscode-yaml'] } });
    const after = await eventually(async () => {
      const item = await versionOf();
      return item?.name === 'Scratch pad' && item;
    });
    expect(after.version).not.toBe(before.version);
    expect(after.extensions).toEqual(['redhat.vscode-yaml']);

    // Edited in place, as some editors save.
    await fs.appendFile(join(dir, 'scratch.yaml'), '# a comment\n');
    await eventually(async () => (await versionOf())?.version !== after.version);

    await fs.rm(join(dir, 'scratch.yaml'));
    await eventually(async () => !(await ids()).includes('scratch'));
    expect((await templates()).data.tabs.map((t: { name: string }) => t.name)).toEqual(['Data', 'Web']);
  });

  describe('an invalid file', () => {
    afterEach(async () => {
      for (const f of await fs.readdir(dir)) if (f.startsWith('broken') || f.startsWith('hostile')) await fs.rm(join(dir, f), { recursive: true, force: true });
      await fs.rm(join(dir, 'archives'), { recursive: true, force: true });
      await eventually(async () => (await templates()).errors === undefined);
    });

    it('is reported with its name, line and column, never hides the others, and the service stays up', async () => {
      await writeWhole(join(dir, 'broken-syntax.yaml'), `${MODELINE}\napiVersion: devbox.dev/v1alpha1\nkind: EditorServerTemplate\nmetadata:\n  name: broken-syntax\ngallery: { name: x, tab: y\nspec: {}\n`);
      await writeWhole(join(dir, 'broken-schema.yaml'), templateText('broken-schema', { spec: { extensions: ['--help'], restartPolicy: 'Sometimes', port: 8080 } }));
      await writeWhole(join(dir, 'broken-name.yaml'), templateText('something-else'));

      const syntax = await eventually(async () => (await errorsOf('broken-syntax.yaml'))[0]);
      expect(syntax.line).toBeGreaterThanOrEqual(6);
      expect(syntax.column).toBeGreaterThan(0);
      const schema = await eventually(async () => { const e = await errorsOf('broken-schema.yaml'); return e.length >= 3 && e; });
      const text = (await fs.readFile(join(dir, 'broken-schema.yaml'), 'utf8')).split('\n');
      const problem = (what: RegExp) => schema.find((e: { problem: string }) => what.test(e.problem));
      expect(problem(/spec\.extensions\.0: must be an extension id/)).toBeDefined();
      expect(text[problem(/spec\.extensions\.0/).line - 1]).toContain('--help');
      expect(problem(/spec: unknown field "port"/)).toBeDefined();
      expect(text[problem(/unknown field "port"/).line - 1]).toContain('port:');
      expect(problem(/spec\.restartPolicy/)).toBeDefined();
      const name = await eventually(async () => (await errorsOf('broken-name.yaml'))[0]);
      expect(name.problem).toMatch(/metadata\.name: "something-else" must equal the file name "broken-name"/);

      expect(await ids()).toEqual(['analytics', 'notebooks', 'frontend']);
      expect(service.lines.some((l) => l.includes('broken-schema.yaml') && l.includes('spec.extensions.0'))).toBe(true);
      const health = (await service.request('GET', '/health')).body;
      expect(health.status).toBe('degraded');
      expect(health.templates.count).toBe(3);
      expect(health.problems).toContainEqual(expect.stringMatching(new RegExp(`^template ${dir}/broken-syntax\\.yaml:\\d+:\\d+: `)));
      expect((await service.request('GET', '/servers')).status).toBe(200);

      // Fixed, it is offered again.
      await writeTemplate(dir, 'broken-name', { tab: 'Web' });
      await eventually(async () => (await ids()).includes('broken-name'));
      expect(await errorsOf('broken-name.yaml')).toEqual([]);
    });

    it('refuses what the folder must not hold: links, FIFOs, folders, huge files, archives outside it', async () => {
      const outside = join(service.root, 'outside');
      await fs.mkdir(outside, { recursive: true });
      await fs.writeFile(join(outside, 'real.yaml'), templateText('hostile-link'));
      await fs.writeFile(join(outside, 'real.zip'), buildZip([{ name: 'a.txt', data: 'a' }]));
      await fs.symlink(join(outside, 'real.yaml'), join(dir, 'hostile-link.yaml'));
      execFileSync('mkfifo', [join(dir, 'hostile-fifo.yaml')]);
      await fs.mkdir(join(dir, 'hostile-folder.yaml'));
      await writeWhole(join(dir, 'hostile-huge.yaml'), `${templateText('hostile-huge')}# ${'x'.repeat(300 * 1024)}\n`);
      await writeWhole(join(dir, 'hostile-up.yaml'), templateText('hostile-up', { spec: { workspace: { source: { archive: { path: '../outside/real.zip' } } } } }));
      await writeWhole(join(dir, 'hostile-absolute.yaml'), templateText('hostile-absolute', { spec: { workspace: { source: { archive: { path: join(outside, 'real.zip') } } } } }));
      await fs.mkdir(join(dir, 'archives'));
      await fs.symlink(outside, join(dir, 'archives', 'linked'));
      await writeWhole(join(dir, 'hostile-through.yaml'), templateText('hostile-through', { spec: { workspace: { source: { archive: { path: 'archives/linked/real.zip' } } } } }));
      await fs.symlink(join(outside, 'real.zip'), join(dir, 'archives', 'escape.zip'));
      await writeWhole(join(dir, 'hostile-escape.yaml'), templateText('hostile-escape', { spec: { workspace: { source: { archive: { path: 'archives/escape.zip' } } } } }));
      await writeWhole(join(dir, 'hostile-git.yaml'), templateText('hostile-git', { spec: { workspace: { source: { git: { url: '--upload-pack=touch /tmp/pwned' } } } } }));

      const expected: Array<[string, RegExp]> = [
        ['hostile-link.yaml', /symbolic link, which is never followed/],
        ['hostile-fifo.yaml', /FIFO/],
        ['hostile-folder.yaml', /is a folder/],
        ['hostile-huge.yaml', /larger than 256 KiB/],
        ['hostile-up.yaml', /archive\.path: .*goes up with "\.\."/],
        ['hostile-absolute.yaml', /archive\.path: .*is absolute/],
        ['hostile-through.yaml', /archive\.path: .*leads out of the templates folder/],
        ['hostile-escape.yaml', /archive\.path: .*symbolic link, which is never followed/],
        ['hostile-git.yaml', /git\.url: .*starts with "-"/],
      ];
      for (const [file, problem] of expected) {
        const errors = await eventually(async () => { const e = await errorsOf(file); return e.length > 0 && e; });
        expect(errors.map((e: { problem: string }) => e.problem), file).toContainEqual(expect.stringMatching(problem));
      }
      const placed = (await errorsOf('hostile-up.yaml'))[0];
      expect((await fs.readFile(join(dir, 'hostile-up.yaml'), 'utf8')).split('\n')[placed.line - 1]).toContain('../outside/real.zip');
      expect(await ids()).toEqual(['analytics', 'notebooks', 'frontend']);
      expect((await service.request('GET', '/health')).status).toBe(200);
    });

    it('becomes valid when the archive it names appears', async () => {
      await writeWhole(join(dir, 'broken-archive.yaml'), templateText('broken-archive', { spec: { workspace: { source: { archive: { path: 'archives/later.zip' } } } } }));
      const [missing] = await eventually(async () => { const e = await errorsOf('broken-archive.yaml'); return e.length > 0 && e; });
      expect(missing.problem).toMatch(/"archives\/later\.zip" is not in the templates folder/);
      await fs.mkdir(join(dir, 'archives'), { recursive: true });
      await writeWhole(join(dir, 'archives', 'later.zip'), buildZip([{ name: 'a.txt', data: 'a' }]));
      await eventually(async () => (await ids()).includes('broken-archive'), 15_000);
      await fs.rm(join(dir, 'broken-archive.yaml'));
    });
  });
});

describe('a templates folder that is not there at start-up', () => {
  it('is picked up when it appears, and again when it is replaced by another folder', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-templates-late-'));
    const late = join(root, 'templates');
    const other = await startTestService({ root, templatesDir: late });
    try {
      expect((await other.request('GET', '/templates')).body).toEqual({ status: 'success', data: { tabs: [] } });
      expect((await other.request('GET', '/health')).body.templates).toMatchObject({ folder: late, exists: false, count: 0 });
      const created = create404(other, 'first');
      expect((await created).body.error.message).toMatch(/there are no templates/);

      // It appears (made elsewhere and moved in, as a checkout would).
      const staged = join(root, 'staged');
      await fs.mkdir(staged);
      await writeTemplate(staged, 'first', { tab: 'One' });
      await fs.rename(staged, late);
      await eventually(async () => (await other.request('GET', '/templates')).body.data.tabs[0]?.items[0]?.id === 'first');

      // Replaced wholesale by another checkout.
      const next = join(root, 'next');
      await fs.mkdir(next);
      await writeTemplate(next, 'second', { tab: 'Two' });
      await fs.rename(late, join(root, 'old'));
      await fs.rename(next, late);
      await eventually(async () => {
        const tabs = (await other.request('GET', '/templates')).body.data.tabs;
        return tabs.length === 1 && tabs[0].items.length === 1 && tabs[0].items[0].id === 'second';
      });
      // And the new folder is watched.
      await writeTemplate(late, 'third', { tab: 'Two' });
      await eventually(async () => (await other.request('GET', '/templates')).body.data.tabs[0].items.length === 2);
      expect(other.lines.some((l) => /templates folder .* (was replaced|appeared)/.test(l))).toBe(true);
    } finally {
      await other.stop();
    }
  });
});

function create404(target: TestService, id: string) {
  return target.request('POST', '/servers/create-from-template', { name: 'x', template_id: id });
}
