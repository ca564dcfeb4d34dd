// The config in use, kept in step with its file: a valid edit is swapped in and listeners are
// told; an invalid one (or a deleted file) leaves the last good config in use and is reported,
// with file, line and column, until an edit fixes it.
import { promises as fs } from 'node:fs';
import { dirname } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { formatProblem, type FileProblem } from '../core/yaml-problems.ts';
import { describeChanges, pendingRestart } from './changes.ts';
import { parseConfig, type Config } from './settings.ts';

export type ConfigListener = (before: Config, after: Config) => void;

/** Where the config in use came from, and what is wrong with the file now. */
export interface ConfigState {
  /** The file, or undefined for the built-in defaults. */
  file: string | undefined;
  /** When the config in use was read. */
  loadedAt: Date;
  /** Problems of the file as it is now; the config in use is the last good one while there are any. */
  errors: FileProblem[];
  /** Edits the running service has not applied ("controller.workers: 8 -> 4 takes effect after a restart"). */
  pendingRestart: string[];
}

export interface LiveConfigOptions {
  /** The file to watch; none: the built-in defaults, never changing. */
  file?: string;
  /** The config read from it at start-up. */
  initial: Config;
  log: (message: string) => void;
  /** How long a burst of file events settles before the file is read (editors write in steps). */
  settleMs?: number;
}

/** A file event may be missed while a rename swaps the file under the watcher: look once more this long after. */
const RECHECK_MS = 500;

export class LiveConfig {
  readonly file: string | undefined;
  private config: Config;
  /** The values the service started with: those of RESTART_ONLY stay in force until a restart. */
  private readonly running: Config;
  private loadedAt = new Date();
  private errors: FileProblem[] = [];
  private pending: string[] = [];
  /** The text last read (valid or not), so repeated events for one write act once. */
  private lastText: string | undefined;
  private readonly listeners = new Set<ConfigListener>();
  private readonly log: (message: string) => void;
  private readonly settleMs: number;
  private watcher: FSWatcher | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private recheckTimer: NodeJS.Timeout | undefined;
  private reading: Promise<void> = Promise.resolve();
  private disposed = false;

  constructor(options: LiveConfigOptions) {
    this.file = options.file;
    this.config = options.initial;
    this.running = structuredClone(options.initial);
    this.log = options.log;
    this.settleMs = options.settleMs ?? 100;
  }

  /** The config in use. Read it where a value is used, not once: it changes with the file. */
  get current(): Config {
    return this.config;
  }

  state(): ConfigState {
    return { file: this.file, loadedAt: this.loadedAt, errors: [...this.errors], pendingRestart: [...this.pending] };
  }

  /** Calls `listener(before, after)` after each valid edit that changed something; returns the unsubscribe. */
  onChange(listener: ConfigListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Watches the file's folder (an editor's save may rename a new file over it, or delete and
   * write it again) and re-reads the file on every event for it. Resolves once watching.
   */
  async watch(): Promise<void> {
    if (this.watcher || this.disposed) return;
    if (!this.file) {
      this.log('config: the built-in defaults (DEVBOX_CONFIG is not set and there is no ./devbox.config.yaml)');
      return;
    }
    const file = this.file;
    this.lastText ??= await fs.readFile(file, 'utf8').catch(() => undefined);
    const dir = dirname(file);
    const watcher = watch(dir, {
      ignoreInitial: true,
      depth: 0,
      // Only the file itself; the folder may be the project root, full of other files.
      ignored: (path) => path !== dir && path !== file,
    });
    this.watcher = watcher;
    watcher.on('all', (_event, path) => {
      if (path === file) this.schedule();
    });
    watcher.on('error', (error) => this.log(`watching the config file ${file} failed: ${(error as Error).message}; edits are not seen until the service restarts`));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    this.log(`config: ${file} (watched: a valid edit applies without a restart)`);
  }

  /** Reads the file now (after any read under way) and applies or reports what it holds. */
  reload(): Promise<void> {
    this.reading = this.reading.then(() => this.read()).catch((error) => this.log(`reading the config file ${this.file} failed: ${(error as Error).stack ?? error}`));
    return this.reading;
  }

  /** Stops watching; timers and listeners go too. */
  async dispose(): Promise<void> {
    this.disposed = true;
    clearTimeout(this.settleTimer);
    clearTimeout(this.recheckTimer);
    this.listeners.clear();
    await this.watcher?.close();
    this.watcher = undefined;
    await this.reading;
  }

  private schedule(): void {
    if (this.disposed) return;
    clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => void this.reload(), this.settleMs);
    this.settleTimer.unref();
    clearTimeout(this.recheckTimer);
    this.recheckTimer = setTimeout(() => void this.reload(), this.settleMs + RECHECK_MS);
    this.recheckTimer.unref();
  }

  private async read(): Promise<void> {
    if (!this.file || this.disposed) return;
    const file = this.file;
    let text: string;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (this.lastText === undefined && this.errors.length > 0) return;
      this.lastText = undefined;
      this.reject([{
        file,
        problem: code === 'ENOENT'
          ? 'the file is gone: put it back (or write a new one) to change the config'
          : `the file cannot be read (${(error as Error).message}): make it readable by the service`,
      }]);
      return;
    }
    if (text === this.lastText) return;
    this.lastText = text;
    const read = parseConfig(file, text);
    if (read.problems) {
      this.reject(read.problems);
      return;
    }
    const before = this.config;
    const changes = describeChanges(before, read.config);
    const wasInvalid = this.errors.length > 0;
    this.config = read.config;
    this.loadedAt = new Date();
    this.errors = [];
    const pending = pendingRestart(this.running, read.config);
    const newlyPending = pending.filter((p) => !this.pending.includes(p));
    this.pending = pending;
    const applied = changes.filter((c) => !pending.some((p) => p.startsWith(`${c.split(':')[0]}:`)));
    const said = [
      ...(applied.length > 0 ? [`applied ${applied.join('; ')}`] : []),
      ...newlyPending,
    ];
    this.log(`config ${file} re-read${wasInvalid ? ' (valid again)' : ''}: ${said.length > 0 ? said.join('; ') : 'nothing changed'}`);
    if (changes.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(before, read.config);
      } catch (error) {
        this.log(`applying the config edit failed: ${(error as Error).stack ?? error}`);
      }
    }
  }

  /** Keeps the config in use and reports every problem, one line each. */
  private reject(problems: FileProblem[]): void {
    this.errors = problems;
    this.log(`config ${this.file} is not valid: the config read at ${this.loadedAt.toISOString()} stays in use until the file is fixed`);
    for (const problem of problems) this.log(formatProblem(problem));
  }
}
