// The templates folder as a catalog of EditorServerTemplates: every file read and checked, kept
// current by a chokidar watch, by a check that notices the folder appearing, going or being
// replaced (a git checkout), and by a resync that re-lists it, so a missed event still shows up.
// An invalid file is reported with its problems and never hides the valid ones.
import { promises as fs } from 'node:fs';
import { basename, join, relative, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { formatProblem, type FileProblem } from '../core/yaml-problems.ts';
import type { CatalogTemplate } from './types.ts';
import { loadTemplateFile, TEMPLATE_EXT, type TemplateCheckContext, type TemplateLoad } from './validate.ts';
import { byText } from '../core/compare.ts';
import { folderIdentity } from '../core/folder-identity.ts';
import { BACKGROUND_MS, every, type Periodic } from '../core/ticks.ts';

/** More template files than this are reported, not read: the folder is untrusted. */
export const MAX_TEMPLATE_FILES = 500;
/** How deep below the folder changes are watched (archives/… that templates name). */
const WATCH_DEPTH = 3;

export interface TemplateCatalogOptions extends TemplateCheckContext {
  log: (message: string) => void;
  /** How often the folder's identity is compared, to notice it appear, go or be replaced. */
  folderCheckMs?: number;
  /** How often the folder is re-listed and changed files read again. */
  resyncMs?: number;
}

interface Entry {
  /** inode, size and mtime when read: a resync reads the file again only when they changed. */
  stamp: string;
  load: Exclude<TemplateLoad, { kind: 'missing' }>;
}

export class TemplateCatalog {
  private readonly entries = new Map<string, Entry>();
  /** The latest read started per file: an older one finishing later is dropped. */
  private readonly reads = new Map<string, number>();
  private reading = 0;
  private watcher: FSWatcher | undefined;
  /** Device and inode of the folder while it exists. */
  private folder: string | undefined;
  private timers: Periodic[] = [];
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  private disposed = false;
  /** After the first read: from then on, changes are logged one by one. */
  private started = false;

  private readonly options: TemplateCatalogOptions;

  constructor(options: TemplateCatalogOptions) {
    this.options = options;
  }

  get dir(): string {
    return this.options.dir;
  }

  /** The folder and the limits its files are checked with. */
  get checkContext(): TemplateCheckContext {
    return this.options;
  }

  /** Whether the templates folder exists now. */
  get folderExists(): boolean {
    return this.folder !== undefined;
  }

  /** Reads the folder (when it exists), watches it, and keeps checking for it. */
  async start(): Promise<void> {
    const { log, folderCheckMs = BACKGROUND_MS, resyncMs = 30_000 } = this.options;
    await this.refresh();
    this.started = true;
    const valid = this.list().length;
    const invalid = this.errors().length;
    log(this.folder === undefined
      ? `templates folder ${this.dir} does not exist: no templates until it appears (set DEVBOX_TEMPLATES_DIR to use another folder)`
      : `templates: ${valid} loaded from ${this.dir}${invalid > 0 ? `, ${new Set(this.errors().map((p) => p.file)).size} file(s) invalid (see GET /templates)` : ''}`);
    const repeat = (ms: number, act: () => Promise<void>) => {
      this.timers.push(every(ms, () => void act().catch((error) => log(`templates: ${(error as Error).message}`))));
    };
    repeat(folderCheckMs, async () => {
      if ((await folderIdentity(this.dir)) !== this.folder) await this.refresh();
    });
    repeat(resyncMs, () => this.refresh());
  }

  /** The valid templates, by tab, then name, then id. */
  list(): CatalogTemplate[] {
    const templates = [...this.entries.values()].flatMap((e) => (e.load.kind === 'ok' ? [e.load.template] : []));
    return templates.sort((a, b) => byText(a.template.gallery.tab, b.template.gallery.tab)
      || byText(a.template.gallery.name, b.template.gallery.name) || byText(a.id, b.id));
  }

  /** The valid template with this id. */
  get(id: string): CatalogTemplate | undefined {
    const load = this.entries.get(`${id}${TEMPLATE_EXT}`)?.load;
    return load?.kind === 'ok' ? load.template : undefined;
  }

  /** The problems of the file of this id when it is invalid. */
  problemsOf(id: string): FileProblem[] | undefined {
    const load = this.entries.get(`${id}${TEMPLATE_EXT}`)?.load;
    return load?.kind === 'invalid' ? load.problems : undefined;
  }

  /** Every problem of every invalid file, by file name. */
  errors(): FileProblem[] {
    return [...this.entries.entries()]
      .sort(([a], [b]) => byText(a, b))
      .flatMap(([, e]) => (e.load.kind === 'invalid' ? e.load.problems : []));
  }

  /**
   * Looks at the folder again now: follows it when it appeared, went or was replaced, and reads
   * every file that changed (or is invalid, or names an archive, which may have changed). Calls
   * that overlap share one pass, and one more runs after it.
   */
  refresh(): Promise<void> {
    if (this.scanning) {
      this.scanAgain = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      try {
        do {
          this.scanAgain = false;
          await this.scan();
        } while (this.scanAgain && !this.disposed);
      } finally {
        this.scanning = undefined;
      }
    })();
    return this.scanning;
  }

  /** Stops watching and checking; the catalog keeps what it has. */
  async dispose(): Promise<void> {
    this.disposed = true;
    for (const timer of this.timers.splice(0)) timer.stop();
    await this.watcher?.close();
    this.watcher = undefined;
    await this.scanning;
  }

  private async scan(): Promise<void> {
    const { log } = this.options;
    const now = await folderIdentity(this.dir);
    if (this.disposed) return;
    if (now !== this.folder) {
      const before = this.folder;
      this.folder = now;
      await this.watcher?.close();
      this.watcher = undefined;
      if (now === undefined) {
        if (this.entries.size > 0) log(`templates folder ${this.dir} is gone: no templates until it is back`);
        this.entries.clear();
        return;
      }
      if (before !== undefined) log(`templates folder ${this.dir} was replaced: reading the new one`);
      else if (this.started) log(`templates folder ${this.dir} appeared: reading it`);
      this.watchFolder();
    }
    if (now === undefined) return;
    const names = (await fs.readdir(this.dir).catch(() => [] as string[]))
      .filter((n) => n.endsWith(TEMPLATE_EXT) && !n.startsWith('.'))
      .sort();
    const listed = new Set(names);
    for (const name of [...this.entries.keys()]) {
      if (!listed.has(name)) this.apply(name, { kind: 'missing' }, '');
    }
    for (const name of names) {
      const entry = this.entries.get(name);
      const stamp = await stampOf(join(this.dir, name));
      const settled = entry?.load.kind === 'ok' && !entry.load.template.template.spec.workspace?.source?.archive;
      if (settled && entry.stamp === stamp) continue;
      await this.read(name);
    }
  }

  private watchFolder(): void {
    const { log } = this.options;
    const watcher = watch(this.dir, {
      ignoreInitial: true,
      depth: WATCH_DEPTH,
      // A link in the folder is reported, never followed (it may lead anywhere).
      followSymlinks: false,
      ignored: (path) => path !== this.dir && basename(path).startsWith('.'),
    });
    this.watcher = watcher;
    watcher.on('all', (_event, path) => {
      const rel = relative(this.dir, path);
      if (!rel.includes(sep) && rel.endsWith(TEMPLATE_EXT)) void this.read(rel).catch((error) => log(`templates: reading ${rel} failed: ${(error as Error).message}`));
      // Anything else (an archive, a folder of them) may change whether a template is valid.
      else void this.refresh().catch((error) => log(`templates: ${(error as Error).message}`));
    });
    watcher.on('error', (error) => log(`watching templates folder ${this.dir} failed: ${(error as Error).message}`));
  }

  /** Reads one file and records what it holds; a read overtaken by a later one is dropped. */
  private async read(name: string): Promise<void> {
    const mine = ++this.reading;
    this.reads.set(name, mine);
    const path = join(this.dir, name);
    const stamp = await stampOf(path);
    let load: TemplateLoad;
    if (!this.entries.has(name) && this.entries.size >= MAX_TEMPLATE_FILES) {
      load = stamp === '' ? { kind: 'missing' } : { kind: 'invalid', problems: [{ file: name, problem: `not read: the templates folder holds more than ${MAX_TEMPLATE_FILES} template files; remove some` }] };
    } else {
      load = await loadTemplateFile(this.options, name).catch((error: Error) => ({
        kind: 'invalid' as const, problems: [{ file: name, problem: `could not be read: ${error.message}` }],
      }));
    }
    if (this.reads.get(name) !== mine || this.disposed) return;
    this.reads.delete(name);
    this.apply(name, load, stamp);
  }

  /** Records a file's outcome, and logs what changed. */
  private apply(name: string, load: TemplateLoad, stamp: string): void {
    const { log } = this.options;
    const before = this.entries.get(name)?.load;
    if (load.kind === 'missing') {
      if (before && this.entries.delete(name)) log(`template file ${name} was removed`);
      return;
    }
    this.entries.set(name, { stamp, load });
    if (load.kind === 'ok') {
      const was = before?.kind === 'ok' ? before.template.version : undefined;
      if (this.started && was !== load.template.version) log(`template ${load.template.id} ${was ? 'changed' : 'added'}: version ${load.template.version}`);
      return;
    }
    const text = load.problems.map((p) => formatProblem({ ...p, file: join(this.dir, p.file) }));
    const previous = before?.kind === 'invalid' ? before.problems.map((p) => formatProblem({ ...p, file: join(this.dir, p.file) })) : [];
    if (text.join('\n') !== previous.join('\n')) log(`template file ${name} is invalid and not offered until it is fixed:\n  ${text.join('\n  ')}`);
  }
}

/** inode, size and mtime of an entry (not following a link); '' when it is gone. */
async function stampOf(path: string): Promise<string> {
  const stats = await fs.lstat(path, { bigint: true }).catch(() => undefined);
  return stats ? `${stats.ino}:${stats.size}:${stats.mtimeNs}` : '';
}
