// TemplateCatalog on its own: a bounded number of files read, and nothing watched or read once disposed.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_TEMPLATE_FILES, TemplateCatalog } from '../../src/templates/catalog.ts';
import { eventually } from '../helpers/wait.ts';
import { templateText, writeTemplate } from './fixtures.ts';

let dir: string;
let catalog: TemplateCatalog | undefined;
const lines: string[] = [];
const open = (extra: Partial<ConstructorParameters<typeof TemplateCatalog>[0]> = {}) =>
  (catalog = new TemplateCatalog({ dir, gitSchemes: ['https'], maxArchiveBytes: 1024 * 1024, log: (l) => lines.push(l), ...extra }));

beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-catalog-'));
  lines.length = 0;
});
afterEach(async () => {
  await catalog?.dispose();
  catalog = undefined;
  await fs.rm(dir, { recursive: true, force: true });
});

describe('TemplateCatalog', () => {
  it(`reads at most ${MAX_TEMPLATE_FILES} template files and reports the others`, async () => {
    await Promise.all(Array.from({ length: MAX_TEMPLATE_FILES + 2 }, (_, i) => fs.writeFile(join(dir, `t-${String(i).padStart(4, '0')}.yaml`), templateText(`t-${String(i).padStart(4, '0')}`))));
    await open().start();
    expect(catalog!.list()).toHaveLength(MAX_TEMPLATE_FILES);
    expect(catalog!.errors().map((e) => e.file)).toEqual(['t-0500.yaml', 't-0501.yaml']);
    expect(catalog!.errors()[0].problem).toMatch(/more than 500 template files; remove some/);
  });

  it('reads nothing once disposed, and keeps what it had', async () => {
    await writeTemplate(dir, 'first');
    await open({ folderCheckMs: 20, resyncMs: 20 }).start();
    await writeTemplate(dir, 'second');
    await eventually(() => catalog!.get('second') !== undefined);
    await catalog!.dispose();
    await writeTemplate(dir, 'third');
    await fs.rm(join(dir, 'first.yaml'));
    // What its timers and watcher would call does nothing now.
    await catalog!.refresh();
    expect(catalog!.list().map((t) => t.id)).toEqual(['first', 'second']);
  });
});
