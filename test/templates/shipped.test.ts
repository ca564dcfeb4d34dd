// The templates the project ships in templates/ are valid: each file passes the checks the
// service makes (schema, name, settings limits, git URL, archive inside the folder), names only
// extension groups of the default config, and starts with the line that gives editors the schema.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/settings.ts';
import { planArchive } from '../../src/workspace/archive-source.ts';
import { loadTemplateFile } from '../../src/templates/validate.ts';
import { defaultGitSchemes } from '../../src/workspace/git-source.ts';

const dir = new URL('../../templates/', import.meta.url).pathname;
const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
const context = { dir, gitSchemes: defaultGitSchemes(false), maxArchiveBytes: DEFAULT_CONFIG.workspace.maxUploadMb * 1024 * 1024 };

describe('the shipped templates', () => {
  it('are at least four, in more than one tab', async () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
    const loads = await Promise.all(files.map((f) => loadTemplateFile(context, f)));
    expect(new Set(loads.map((l) => (l.kind === 'ok' ? l.template.template.gallery.tab : undefined))).size).toBeGreaterThan(1);
  });

  it.each(files)('%s is a valid template of the default config', async (file) => {
    const load = await loadTemplateFile(context, file);
    expect(load.kind === 'invalid' ? load.problems : []).toEqual([]);
    if (load.kind !== 'ok') throw new Error(`${file} did not load`);
    const { template } = load.template;
    expect(template.metadata.name).toBe(file.replace(/\.yaml$/, ''));
    for (const group of template.spec.extensionGroups ?? []) expect(Object.keys(DEFAULT_CONFIG.extensionGroups)).toContain(group);
    const archive = template.spec.workspace?.source?.archive;
    if (archive) expect(planArchive(join(dir, archive.path)).length).toBeGreaterThan(0);
    expect((await fs.readFile(join(dir, file), 'utf8')).split('\n')[0]).toBe('# yaml-language-server: $schema=../schemas/editorservertemplate.schema.json');
  });

  it('include one with a git source and one with a Databricks and Claude Code set-up', async () => {
    const loads = await Promise.all(files.map((f) => loadTemplateFile(context, f)));
    const specs = loads.flatMap((l) => (l.kind === 'ok' ? [l.template.template.spec] : []));
    expect(specs.some((s) => s.workspace?.source?.git)).toBe(true);
    expect(specs.some((s) => s.extensionGroups?.includes('databricks') && s.extensionGroups.includes('claude-code'))).toBe(true);
  });
});
