// The process runtime's storage: each server's workspace and editor data are folders under the
// data folder on this machine (DataLayout), its settings a file in them, its extensions
// installed there by code-server's own CLI. (Its output, two files the log hub follows, is the
// workload's: processes.ts.)
import { promises as fs } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { writeFileAtomic } from '../core/atomic-write.ts';
import type { ExtensionInstaller } from '../extensions/installer.ts';
import { extractInto } from '../workspace/archive-source.ts';
import { cloneInto } from '../workspace/git-source.ts';
import { ensureWorkspace, removeServerFiles, type DataLayout } from '../workspace/layout.ts';
import type { EditorStorage, RestoreFiles, ServerFiles } from './editor-storage.ts';
import type { ExtensionOutcome, InstalledExtensions, PopulateOutcome, PopulateSource } from './interface.ts';


export class LocalStorage implements EditorStorage {
  readonly layout: DataLayout;
  readonly #installer: ExtensionInstaller;

  constructor(layout: DataLayout, installer: ExtensionInstaller) {
    this.layout = layout;
    this.#installer = installer;
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

  async readWorkspaceFile(name: string, path: string, maxBytes: number): Promise<Buffer | undefined> {
    return readInside(this.layout.workspace(name), path, maxBytes);
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



/** Writes the file atomically, making its folder first. */
/**
 * The editor's settings and the controller's record of what it applied: whole or not at all, and
 * flushed (durable), since a settings file lost to a power cut would be the person's own edits.
 */
async function writeInFolder(file: string, text: string): Promise<void> {
  await fs.mkdir(dirname(file), { recursive: true });
  await writeFileAtomic(file, text, { durable: true });
}

/**
 * `path` under `root`, read whole, or undefined when there is none (or it is not a file). A link
 * is followed only while it stays inside `root` (a repository's devcontainer.json may be a link to
 * another file of it, never to one of the machine's).
 */
export async function readInside(root: string, path: string, maxBytes: number): Promise<Buffer | undefined> {
  if (isAbsolute(path) || path.split(/[\\/]/).includes('..')) throw new Error(`${path}: must be a path inside the workspace, without ".."`);
  const realRoot = await fs.realpath(root).catch(() => undefined);
  if (realRoot === undefined) return undefined;
  const real = await fs.realpath(join(root, path)).catch(() => undefined);
  if (real === undefined) return undefined;
  const inside = relative(realRoot, real);
  if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) throw new Error(`${path}: a link to a file outside the workspace is not read`);
  const handle = await fs.open(real, 'r').catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return undefined;
    if (stat.size > maxBytes) throw new Error(`${path}: ${stat.size} bytes, more than the ${maxBytes} read`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
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
