// The process runtime's storage: each server's workspace and editor data are folders under the
// data folder on this machine (DataLayout), its settings a file in them, its extensions
// installed there by code-server's own CLI, and its output two files the log hub follows.
import { pause } from '../core/pause.ts';
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.ts';
import type { ExtensionInstaller } from '../extensions/installer.ts';
import { extractInto } from '../workspace/archive-source.ts';
import { cloneInto } from '../workspace/git-source.ts';
import { ensureWorkspace, removeServerFiles, type DataLayout } from '../workspace/layout.ts';
import type { RestoreFiles, ServerFiles } from './editor-storage.ts';
import type { EditorOutput, ExtensionOutcome, InstalledExtensions, PopulateOutcome, PopulateSource } from './interface.ts';

/** Where an editor's own output goes: two files the log hub follows (editor.out, editor.err). */
export type OutputFiles = (name: string) => { stdout: string; stderr: string };

/** How often a log stream looks for new output in the files. */
const FOLLOW_MS = 100;

export class LocalStorage {
  readonly layout: DataLayout;
  readonly #installer: ExtensionInstaller;
  readonly outputOf: OutputFiles;

  constructor(layout: DataLayout, installer: ExtensionInstaller, outputOf: OutputFiles) {
    this.layout = layout;
    this.#installer = installer;
    this.outputOf = outputOf;
  }

  /**
   * Makes the workspace folder (a person may put files in it before the first start, and a
   * snapshot keeps it); the editor's own folders and config file come with the first start or
   * extension install that needs them (ensureWorkspace).
   */
  async prepare(name: string): Promise<string> {
    const workspace = this.layout.workspace(name);
    await fs.mkdir(workspace, { recursive: true });
    return workspace;
  }

  async workspaceEmpty(name: string): Promise<boolean> {
    return (await fs.readdir(this.layout.workspace(name)).catch(() => [])).length === 0;
  }

  async populate(name: string, source: PopulateSource, signal: AbortSignal): Promise<PopulateOutcome> {
    const workspace = await ensureWorkspace(this.layout, name);
    await removeLeftovers(workspace);
    if ('archive' in source) return { entries: await extractInto(workspace, source.archive.path, signal) };
    await cloneInto(workspace, source.git, { schemes: source.schemes, timeoutMs: source.timeoutMs, signal });
    return {};
  }

  readSettings(name: string): Promise<string | undefined> {
    return readIfThere(this.#settingsFile(name));
  }

  writeSettings(name: string, text: string): Promise<void> {
    return writeInFolder(this.#settingsFile(name), text);
  }

  readAppliedSettings(name: string): Promise<string | undefined> {
    return readIfThere(this.#appliedFile(name));
  }

  writeAppliedSettings(name: string, text: string): Promise<void> {
    return writeInFolder(this.#appliedFile(name), text);
  }

  installedExtensions(name: string): Promise<InstalledExtensions> {
    return this.#installer.installed(this.#target(name));
  }

  // The extension CLI is code-server too: it needs the editor's folders and config file.
  async installExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome> {
    await ensureWorkspace(this.layout, name);
    return this.#installer.install(this.#target(name), id, signal);
  }

  async uninstallExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome> {
    await ensureWorkspace(this.layout, name);
    return this.#installer.uninstall(this.#target(name), id, signal);
  }

  async remove(name: string): Promise<void> {
    // A clone or extraction a killed service left beside the workspace is the server's too.
    await removeLeftovers(this.layout.workspace(name));
    await removeServerFiles(this.layout, name);
  }

  /** Follows the editor's output files: what is in them (since 'start') or only what comes next. */
  async *logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
    const files = this.outputOf(name);
    const tails = [new Tail(files.stdout, 'stdout'), new Tail(files.stderr, 'stderr')];
    if (options.since !== 'start') for (const tail of tails) await tail.skipToEnd();
    while (!options.signal.aborted) {
      let any = false;
      for (const tail of tails) {
        for (const line of await tail.read()) {
          any = true;
          yield { stream: tail.stream, line };
        }
      }
      if (!any) await pause(FOLLOW_MS, options.signal);
    }
  }

  #settingsFile(name: string): string {
    return join(this.layout.editor(name).userDataDir, 'User', 'settings.json');
  }

  #appliedFile(name: string): string {
    return join(this.layout.editor(name).root, 'settings-applied.json');
  }

  #target(name: string) {
    return { name, ...this.layout.editor(name) };
  }

  /** The server's live folders: a snapshot reads them where they are (nothing copied, nothing to release). */
  async openForSnapshot(name: string): Promise<ServerFiles> {
    return { workspace: this.layout.workspace(name), user: join(this.layout.editor(name).userDataDir, 'User'), live: true, release: async () => undefined };
  }

  /** The server's live folders (made when missing): a restore writes into them, so there is nothing to commit. */
  async openForRestore(name: string): Promise<RestoreFiles> {
    await ensureWorkspace(this.layout, name);
    return { ...(await this.openForSnapshot(name)), commit: async () => undefined };
  }
}

/** Complete lines appended to a file since the last read; a file replaced or cut is read from its start. */
class Tail {
  readonly #path: string;
  readonly stream: 'stdout' | 'stderr';
  #ino = -1;
  #offset = 0;
  #partial = '';

  constructor(path: string, stream: 'stdout' | 'stderr') {
    this.#path = path;
    this.stream = stream;
  }

  async skipToEnd(): Promise<void> {
    const stat = await fs.stat(this.#path).catch(() => undefined);
    if (stat) [this.#ino, this.#offset] = [stat.ino, stat.size];
  }

  async read(): Promise<string[]> {
    const handle = await fs.open(this.#path, 'r').catch(() => undefined);
    if (!handle) return [];
    try {
      const { ino, size } = await handle.stat();
      if (ino !== this.#ino || size < this.#offset) [this.#ino, this.#offset, this.#partial] = [ino, 0, ''];
      const length = Math.min(size - this.#offset, 1 << 20);
      if (length <= 0) return [];
      const buffer = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(buffer, 0, length, this.#offset);
      this.#offset += bytesRead;
      const lines = (this.#partial + buffer.toString('utf8', 0, bytesRead)).split('\n');
      this.#partial = lines.pop() ?? '';
      return lines;
    } finally {
      await handle.close();
    }
  }
}


/** Writes the file atomically, making its folder first. */
async function writeInFolder(file: string, text: string): Promise<void> {
  await fs.mkdir(dirname(file), { recursive: true });
  await writeFileAtomic(file, text);
}

async function readIfThere(file: string): Promise<string | undefined> {
  return fs.readFile(file, 'utf8').catch(() => undefined);
}

/** A clone or extraction folder left beside the workspace by a service that died mid-way. */
async function removeLeftovers(workspace: string): Promise<void> {
  const prefix = `.${basename(workspace)}.`;
  const parent = dirname(workspace);
  for (const entry of await fs.readdir(parent).catch(() => [])) {
    if (entry.startsWith(prefix) && /^(clone|extract)-[0-9a-f]{8}$/.test(entry.slice(prefix.length))) await fs.rm(join(parent, entry), { recursive: true, force: true });
  }
}
