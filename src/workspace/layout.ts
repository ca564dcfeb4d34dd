// Where a server's files live under the data folder, and creating and removing them.
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { writeEditorConfig } from '../core/editor-config.ts';

export class DataLayout {
  readonly dataDir: string;

  constructor(dataDir: string) {
    this.dataDir = dataDir;
  }

  get editorsDir(): string {
    return join(this.dataDir, 'editors');
  }

  get logsDir(): string {
    return join(this.dataDir, 'logs');
  }

  /** The controller's status records, one per server (see ManifestStore). */
  get statusDir(): string {
    return join(this.dataDir, 'status');
  }

  /** Where earlier versions kept a working copy of a cluster's EditorServer objects: removed at start in CRD mode. */
  get clusterManifestsDir(): string {
    return join(this.dataDir, 'cluster-manifests');
  }

  workspace(name: string): string {
    return join(this.dataDir, 'workspaces', name);
  }

  /** The server whose workspace `path` is in this data folder; undefined for any other path. */
  workspaceOwner(path: string): string | undefined {
    return dirname(path) === join(this.dataDir, 'workspaces') ? basename(path) : undefined;
  }

  editor(name: string): { root: string; userDataDir: string; extensionsDir: string; configPath: string } {
    const root = join(this.editorsDir, name);
    return {
      root,
      userDataDir: join(root, 'user-data'),
      extensionsDir: join(root, 'extensions'),
      configPath: join(root, 'config.yaml'),
    };
  }

  /** Where the server's uid is kept, so the name keeps it whatever its manifest says or lacks. */
  uidFile(name: string): string {
    return join(this.editorsDir, name, 'uid');
  }
}

/** Makes sure the server's workspace and editor folders exist; returns the workspace path. */
export async function ensureWorkspace(layout: DataLayout, name: string): Promise<string> {
  const workspace = layout.workspace(name);
  const editor = layout.editor(name);
  await fs.mkdir(workspace, { recursive: true });
  await fs.mkdir(editor.userDataDir, { recursive: true });
  await fs.mkdir(editor.extensionsDir, { recursive: true });
  await writeEditorConfig(editor.configPath);
  return workspace;
}

/** Removes everything the server owns on disk (workspace and editor data; logs are the log hub's). */
export async function removeServerFiles(layout: DataLayout, name: string): Promise<void> {
  await fs.rm(layout.workspace(name), { recursive: true, force: true });
  await fs.rm(layout.editor(name).root, { recursive: true, force: true });
}
