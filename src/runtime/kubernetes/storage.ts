// The Kubernetes runtime's storage: each server's PersistentVolumeClaim, made at the editor's
// first start (a server that never ran has nothing on the cluster), reached through a container
// that mounts it. While the editor runs, its own container; a storage call made while it is
// stopped (the controller makes none: it waits for the editor, see storageDeferred) goes to a
// short-lived helper Pod (`<prefix><name>-storage`) that mounts the claim and waits. What a
// running editor's volume holds (an empty workspace or not, the extensions) is known from its
// Pod's own report (prepare.ts) and from this service's changes, so only a change costs an exec.
// Files go in and out by exec: reads with `cat`, writes with exactly their length on stdin (the
// exec protocol cannot close stdin), sources as a tar stream. A git source is cloned and a ZIP
// extracted here, by the service, with the same rules as on one machine (allowed schemes,
// limits), then shipped: the Pods need no route to the outside, and a ZIP's bytes never need a
// registry or a URL.
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { V1PersistentVolumeClaim, V1Pod, V1StorageClass } from '@kubernetes/client-node';
import { extensionFolder, extensionName, findVsix, isVsixPath, parseExtensionsList, pinnedVersion } from '../../extensions/extensions-folder.ts';
import { judgeInstall, judgeUninstall } from '../../extensions/installer.ts';
import { extractInto } from '../../workspace/archive-source.ts';
import { cloneInto } from '../../workspace/git-source.ts';
import type { EditorStorage, FilesOptions, RestoreFiles, ServerFiles } from '../editor-storage.ts';
import { type ExtensionOutcome, type InstalledExtensions, type PopulateOutcome, type PopulateSource } from '../interface.ts';
import { claimSize } from './claim-size.ts';
import { messageOf } from './client.ts';
import type { ClusterApi } from './cluster-api.ts';
import { APPLIED_FILE, CONFIG_PATH, DATA_ROOT, EDITOR_CONTAINER, EXTENSIONS_DIR, HELPER_CONTAINER, READ_INSIDE, SETTINGS_FILE, USER_DATA_DIR, WORKSPACE, type Names } from './names.ts';
import type { Owner, ServerObjects } from './objects.ts';
import { editorCommandOf } from './foreign-image.ts';
import { preparedReport } from './prepare.ts';
import { StorageHelpers } from './storage-helper.ts';
import { copyOut, withCommit, type RunInVolume } from './volume-files.ts';

/** A container that mounts the server's volume, to exec in. */
interface Mounted { pod: string; container: string }

export interface StorageDeps {
  client: ClusterApi;
  names: Names;
  objects: ServerObjects;
  /** The server's editor Pod when it runs and serves (its container is used instead of a helper). */
  runningEditor(name: string): V1Pod | undefined;
  /** The server's helper Pod in the runtime's view of its Pods, if there is one. */
  helperPod(name: string): V1Pod | undefined;
  /** The command that runs code-server in the image (its extension CLI); a running editor's own Pod says its own (foreign-image.ts). */
  editorCommand: string[];
  /** The configured size of a new volume (runtime.kubernetes.storage.size). */
  storageSize: string;
  /** A server the storage was asked about: its objects' events are its events from now on. */
  known(name: string): void;
  /** The server's storage was removed: whatever else is kept of it may go. */
  removed(name: string): void;
  /** DEVBOX_VSIX_DIR: .vsix files looked at before the marketplace. */
  vsixDir?: string;
  /** How long a helper Pod may take to run (image pull, scheduling). */
  helperTimeoutMs?: number;
}

const EXTENSION_TIMEOUT_MS = 180_000;

export class KubernetesStorage implements EditorStorage {
  readonly #deps: StorageDeps;
  /** Anchors made in this run, by server: the owner of the server's other objects. */
  readonly #owners = new Map<string, Owner>();
  /** The helper Pods that mount a volume while no editor runs. */
  readonly #helpers: StorageHelpers;
  /** What each running editor's volume is known to hold, by Pod uid (its report, then this service's changes). */
  readonly #known = new Map<string, { workspaceUsed?: true; extensions?: InstalledExtensions }>();

  constructor(deps: StorageDeps) {
    this.#deps = deps;
    this.#helpers = new StorageHelpers({ ...deps, owner: (name) => this.owner(name), ensureClaim: (name) => this.ensureClaim(name) });
  }

  /** Nothing on the cluster yet: the claim comes with the first start (a server never started costs nothing there). */
  async prepare(name: string): Promise<string> {
    this.#deps.known(name);
    return WORKSPACE;
  }

  /** While no editor runs, its volume is mounted nowhere: the controller's storage work waits for the editor. */
  storageDeferred(name: string): boolean {
    return this.#deps.runningEditor(name) === undefined;
  }

  /** The server's anchor (made when missing): every object of the server is its dependent. */
  async owner(name: string): Promise<Owner> {
    const known = this.#owners.get(name);
    if (known) return known;
    const { client, objects } = this.#deps;
    const anchor = await client.apply<{ metadata?: { uid?: string; name?: string } }>(objects.anchor(name));
    const owner = { uid: anchor.metadata!.uid!, name: anchor.metadata!.name! };
    this.#owners.set(name, owner);
    return owner;
  }

  /**
   * The server's anchor and claim (applied: made when missing); the editor's start makes them,
   * with `minBytes` the least its volume must hold (claim-size.ts). Says why, when the volume
   * that exists is smaller and cannot grow.
   */
  async ensureClaim(name: string, minBytes?: number): Promise<{ short?: string }> {
    const { client, names, objects } = this.#deps;
    const owner = await this.owner(name);
    const existing = await client.read<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', names.object(name));
    const { size, short } = await claimSize(this.#deps.storageSize, existing?.spec?.resources?.requests?.storage, minBytes, async () => {
      const className = existing?.spec?.storageClassName;
      const found = className ? await client.read<V1StorageClass>('storage.k8s.io/v1', 'StorageClass', className).catch(() => undefined) : undefined;
      return found?.allowVolumeExpansion === true;
    });
    await client.apply(objects.claim(name, owner, size));
    return short ? { short } : {};
  }

  /** True while the server has no claim (a server that never ran); nothing is started to find that out. */
  async #hasClaim(name: string): Promise<boolean> {
    if (this.#deps.runningEditor(name)) return true;
    return (await this.#deps.client.read('v1', 'PersistentVolumeClaim', this.#deps.names.object(name))) !== undefined;
  }

  /** What is known of the running editor's volume, seeded from its Pod's report. */
  #knownOf(pod: V1Pod): { workspaceUsed?: true; extensions?: InstalledExtensions } {
    const uid = pod.metadata!.uid!;
    let known = this.#known.get(uid);
    if (!known) {
      const report = preparedReport(pod);
      known = { ...(report?.workspaceEmpty === false ? { workspaceUsed: true as const } : {}), ...(report?.extensions ? { extensions: report.extensions } : {}) };
      this.#known.set(uid, known);
    }
    return known;
  }

  /** Forgets what was known of an editor Pod's volume (the Pod is gone). */
  forgetPod(uid: string): void {
    this.#known.delete(uid);
  }

  async readWorkspaceFile(name: string, path: string, maxBytes: number): Promise<Buffer | undefined> {
    const read = (await this.#hasClaim(name)) ? await this.#run(name, ['sh', '-c', READ_INSIDE, 'read', WORKSPACE, path, String(maxBytes)]) : undefined;
    return read === undefined || read.code === 3 ? undefined : read.code === 0 ? read.stdout : Promise.reject(new Error(`${path}: ${read.stderr.trim() || `not read (exit ${read.code})`}`));
  }

  async workspaceEmpty(name: string): Promise<boolean> {
    if (!(await this.#hasClaim(name))) return true;
    // A workspace with content stays so as far as the controller cares (a source goes only into
    // an empty one); one said empty is looked at again, as a source is about to go in.
    const editor = this.#deps.runningEditor(name);
    if (editor && this.#knownOf(editor).workspaceUsed) return false;
    const { stdout } = await this.#run(name, ['sh', '-c', `ls -A ${WORKSPACE} 2>/dev/null | head -n 1`]);
    const empty = stdout.toString('utf8').trim() === '';
    if (!empty && editor) this.#knownOf(editor).workspaceUsed = true;
    return empty;
  }

  async populate(name: string, source: PopulateSource, signal: AbortSignal): Promise<PopulateOutcome> {
    const local = await fs.mkdtemp(join(tmpdir(), 'devbox-populate-'));
    const staging = `${DATA_ROOT}/.populate-${randomBytes(4).toString('hex')}`;
    const archive = join(local, 'source.tar');
    try {
      const workspace = join(local, 'workspace');
      await fs.mkdir(workspace);
      let entries: number | undefined;
      if ('archive' in source) entries = await extractInto(workspace, source.archive.path, signal);
      else await cloneInto(workspace, source.git, { schemes: source.schemes, timeoutMs: source.timeoutMs, signal });
      await execa('tar', ['-c', '-f', archive, '-C', workspace, '--owner=0', '--group=0', '--numeric-owner', '.'], { cancelSignal: signal });
      const size = (await fs.stat(archive)).size;
      const moveIn = [
        'set -e',
        `mkdir -p ${staging} ${WORKSPACE}`,
        `head -c ${size} | tar -x -f - -C ${staging}`,
        // Only an empty workspace is filled.
        `if [ -n "$(ls -A ${WORKSPACE})" ]; then rm -rf ${staging}; echo "the workspace is not empty: nothing was put into it" >&2; exit 3; fi`,
        `for e in ${staging}/* ${staging}/.[!.]* ${staging}/..?*; do if [ -e "$e" ] || [ -L "$e" ]; then mv "$e" ${WORKSPACE}/; fi; done`,
        `rm -rf ${staging}`,
      ].join('\n');
      const result = await this.#run(name, ['sh', '-c', moveIn], { stdin: createReadStream(archive), signal }).catch(async (error) => {
        await this.#run(name, ['rm', '-rf', staging]).catch(() => undefined);
        throw error;
      });
      if (result.code !== 0) throw new Error(result.stderr.trim() || `putting the source into the workspace failed (exit ${result.code})`);
      const editor = this.#deps.runningEditor(name);
      if (editor) this.#knownOf(editor).workspaceUsed = true;
      return entries === undefined ? {} : { entries };
    } finally {
      await fs.rm(local, { recursive: true, force: true });
    }
  }

  readSettings(name: string): Promise<string | undefined> {
    return this.#readFile(name, SETTINGS_FILE);
  }

  writeSettings(name: string, text: string): Promise<void> {
    return this.#writeFile(name, SETTINGS_FILE, text);
  }

  readAppliedSettings(name: string): Promise<string | undefined> {
    return this.#readFile(name, APPLIED_FILE);
  }

  writeAppliedSettings(name: string, text: string): Promise<void> {
    return this.#writeFile(name, APPLIED_FILE, text);
  }

  async installedExtensions(name: string): Promise<InstalledExtensions> {
    if (!(await this.#hasClaim(name))) return new Map();
    const editor = this.#deps.runningEditor(name);
    const known = editor && this.#knownOf(editor);
    if (known?.extensions) return new Map(known.extensions);
    const found = await this.#listExtensions(name);
    if (known) known.extensions = new Map(found);
    return found;
  }

  /** The extensions in the volume, read where it is mounted (an exec). */
  async #listExtensions(name: string): Promise<InstalledExtensions> {
    const script = `cd ${EXTENSIONS_DIR} 2>/dev/null || exit 0
if [ -f extensions.json ]; then echo '#list'; cat extensions.json; exit 0; fi
for d in */; do if [ -f "$d/package.json" ]; then echo "\${d%/}"; fi; done`;
    const text = (await this.#run(name, ['sh', '-c', script])).stdout.toString('utf8');
    if (text.startsWith('#list\n')) {
      const listed = parseExtensionsList(text.slice('#list\n'.length));
      if (listed) return listed;
    }
    const found: InstalledExtensions = new Map();
    for (const line of text.split('\n')) {
      const folder = extensionFolder(line.trim());
      if (folder) found.set(folder.id, folder.version);
    }
    return found;
  }

  async installExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome> {
    // A .vsix (named by path, or found in DEVBOX_VSIX_DIR) is copied into the volume first.
    const local = isVsixPath(id) ? id : this.#deps.vsixDir ? await findVsix(this.#deps.vsixDir, id) : undefined;
    let target = id;
    if (local) {
      const bytes = await fs.readFile(local).catch(() => undefined);
      if (!bytes) return { ok: false, message: `${local} cannot be read` };
      target = `${DATA_ROOT}/.vsix/${randomBytes(4).toString('hex')}.vsix`;
      await this.#writeFile(name, target, bytes);
    }
    const pinned = pinnedVersion(id) !== undefined || local !== undefined;
    try {
      return await this.#extensionCli(name, ['--install-extension', target, ...(pinned ? ['--force'] : [])], signal, judgeInstall);
    } finally {
      if (local) await this.#run(name, ['rm', '-f', target]).catch(() => undefined);
    }
  }

  uninstallExtension(name: string, id: string, signal: AbortSignal): Promise<ExtensionOutcome> {
    return this.#extensionCli(name, ['--uninstall-extension', extensionName(id)], signal, judgeUninstall);
  }

  async #extensionCli(
    name: string, action: string[], signal: AbortSignal, judge: (code: number | undefined, output: string) => ExtensionOutcome,
  ): Promise<ExtensionOutcome> {
    // A running editor's init container made the config; a helper's volume may lack it.
    if (!this.#deps.runningEditor(name)) await this.#writeFile(name, CONFIG_PATH, 'auth: none\ncert: false\n', { ifMissing: true });
    const launcher = editorCommandOf(this.#deps.runningEditor(name)) ?? this.#deps.editorCommand;
    const command = [...launcher, '--config', CONFIG_PATH, '--extensions-dir', EXTENSIONS_DIR, '--user-data-dir', USER_DATA_DIR, ...action];
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(EXTENSION_TIMEOUT_MS)]);
    // What the editor's volume holds changes: read again at the next question.
    const editor = this.#deps.runningEditor(name);
    if (editor) delete this.#knownOf(editor).extensions;
    try {
      const result = await this.#run(name, command, { signal: bounded });
      return judge(result.code, `${result.stdout.toString('utf8')}\n${result.stderr}`);
    } catch (error) {
      if (signal.aborted) return { ok: false, cancelled: true };
      return { ok: false, message: messageOf(error).slice(0, 500) };
    }
  }

  /** Deletes every object of the server, its volume included, and returns once they are gone. */
  async remove(name: string): Promise<void> {
    const { client, names } = this.#deps;
    const object = names.object(name);
    const doomed: Array<[string, string, string]> = [
      ['v1', 'Pod', names.storagePod(name)], ['apps/v1', 'StatefulSet', object], ['v1', 'Pod', names.editorPod(name)],
      ['v1', 'Service', object], ['v1', 'PersistentVolumeClaim', object], ['v1', 'ConfigMap', object],
    ];
    for (const [apiVersion, kind, objectName] of doomed) {
      const found = await client.read<{ metadata?: { uid?: string; labels?: Record<string, string> } }>(apiVersion, kind, objectName);
      // Only what is labelled as this server's: a stranger's object of that name is left alone.
      if (found && names.serverOf(found.metadata) === name) await client.delete(apiVersion, kind, objectName, { uid: found.metadata?.uid, graceSeconds: kind === 'Pod' ? 1 : undefined });
    }
    this.#owners.delete(name);
    const deadline = Date.now() + 120_000;
    for (const [apiVersion, kind, objectName] of doomed) {
      while (true) {
        const found = await client.read<{ metadata?: { labels?: Record<string, string> } }>(apiVersion, kind, objectName);
        if (!found || names.serverOf(found.metadata) !== name) break;
        if (Date.now() > deadline) throw new Error(`${kind} ${objectName} is still there two minutes after it was deleted`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    this.#deps.removed(name);
  }

  /**
   * The claim made (at least `minBytes`, see ensureClaim) and the helper Pod ended, as the editor
   * starts: one Pod on the volume at a time.
   */
  async readyForEditor(name: string, minBytes?: number): Promise<{ short?: string }> {
    const claim = await this.ensureClaim(name, minBytes);
    await this.releaseHelper(name);
    return claim;
  }

  /** Ends the helper Pod as the editor starts (storage-helper.ts). */
  releaseHelper(name: string): Promise<void> {
    return this.#helpers.release(name);
  }

  async #readFile(name: string, path: string): Promise<string | undefined> {
    if (!(await this.#hasClaim(name))) return undefined;
    const result = await this.#run(name, ['sh', '-c', `if [ -f '${path}' ]; then cat '${path}'; else exit 4; fi`]);
    if (result.code === 4) return undefined;
    if (result.code !== 0) throw new Error(`reading ${path} failed: ${result.stderr.trim()}`);
    return result.stdout.toString('utf8');
  }

  async #writeFile(name: string, path: string, content: string | Buffer, options: { ifMissing?: boolean } = {}): Promise<void> {
    const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    const dir = path.slice(0, path.lastIndexOf('/'));
    const temp = `${path}.tmp-${randomBytes(4).toString('hex')}`;
    const script = `${options.ifMissing ? `[ -e '${path}' ] && exit 0; ` : ''}mkdir -p '${dir}' && { head -c ${bytes.length} > '${temp}' && mv '${temp}' '${path}' || { rm -f '${temp}'; exit 1; }; }`;
    const result = await this.#run(name, ['sh', '-c', script], { stdin: Readable.from([bytes]) });
    if (result.code !== 0) throw new Error(`writing ${path} failed: ${result.stderr.trim()}`);
  }

  /** Runs a command where the server's volume is mounted: the running editor, else the helper Pod. */
  async #run(name: string, command: string[], options: { stdin?: Readable; signal?: AbortSignal } = {}) {
    const where = await this.#mounted(name);
    return this.#deps.client.exec(where.pod, where.container, command, options);
  }

  async #mounted(name: string): Promise<Mounted> {
    const editor = this.#deps.runningEditor(name);
    if (editor?.metadata?.name) return { pod: editor.metadata.name, container: EDITOR_CONTAINER };
    return { pod: await this.#helpers.use(name), container: HELPER_CONTAINER };
  }

  /** Forgets the helpers' timers (the service stops; a helper left behind ends by its own deadline). */
  dispose(): void {
    this.#helpers.dispose();
  }

  /** The server's files copied out of its volume into a staging folder (volume-files.ts); empty folders while it has no claim. */
  async openForSnapshot(name: string, options: FilesOptions): Promise<ServerFiles> {
    return copyOut((await this.#hasClaim(name)) ? this.#inVolume(name) : undefined, name, options);
  }

  /** The server's files copied out of its volume (its claim made when missing), and a commit that puts them back. */
  async openForRestore(name: string, options: FilesOptions): Promise<RestoreFiles> {
    await this.ensureClaim(name);
    return withCommit(await copyOut(this.#inVolume(name), name, options), this.#inVolume(name), name, options);
  }

  #inVolume(name: string): RunInVolume {
    return async (command, options) => this.#mounted(name).then((where) => this.#deps.client.exec(where.pod, where.container, command, options));
  }
}
