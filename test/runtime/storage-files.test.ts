// A server's files as folders on this machine, for persistence (EditorStorage's openForSnapshot and
// openForRestore): local processes give their live folders; the Kubernetes storage copies out of
// the volume and back through exec, here over the in-memory cluster whose exec runs the command
// for real (sh, tar) on a folder that stands in for the mounted volume.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EditorStorage, FilesOptions } from '../../src/runtime/editor-storage.ts';
import type { KubernetesWorkload } from '../../src/runtime/kubernetes/runtime.ts';
import { LocalStorage } from '../../src/runtime/process-storage.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { FakeCluster, runtimeOn } from '../helpers/fake-cluster.ts';
import { FakeInstaller } from '../helpers/fakes.ts';
import { eventually } from '../helpers/wait.ts';

const USER_FILES = ['settings.json', 'keybindings.json', 'tasks.json', 'snippets'];
let root: string;
const optionsFor = (): FilesOptions => ({ signal: AbortSignal.timeout(30_000), stagingDir: join(root, 'staging'), userFiles: USER_FILES });

beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-storage-files-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('the files of a local server', () => {
  it('are its live folders: nothing is copied, and releasing leaves them as they are', async () => {
    const layout = new DataLayout(join(root, 'data'));
    const storage: EditorStorage = new LocalStorage(layout, new FakeInstaller());
    await storage.prepare('alpha');
    await fs.writeFile(join(layout.workspace('alpha'), 'a.txt'), 'hello');
    const files = await storage.openForSnapshot('alpha', optionsFor());
    expect(files).toMatchObject({ workspace: layout.workspace('alpha'), user: join(layout.editor('alpha').userDataDir, 'User'), live: true });
    await files.release();
    expect(await fs.readFile(join(layout.workspace('alpha'), 'a.txt'), 'utf8')).toBe('hello');
    await expect(fs.stat(join(root, 'staging'))).rejects.toThrow();
  });

  it('are written in place by a restore, the folders made when missing, with nothing to commit', async () => {
    const layout = new DataLayout(join(root, 'data'));
    const storage: EditorStorage = new LocalStorage(layout, new FakeInstaller());
    const files = await storage.openForRestore('beta', optionsFor());
    await fs.mkdir(files.user, { recursive: true });
    await fs.writeFile(join(files.workspace, 'b.txt'), 'back');
    await fs.writeFile(join(files.user, 'settings.json'), '{}');
    await files.commit(AbortSignal.timeout(1000));
    await files.release();
    expect(await fs.readFile(join(layout.workspace('beta'), 'b.txt'), 'utf8')).toBe('back');
    expect(await fs.readFile(join(layout.editor('beta').userDataDir, 'User', 'settings.json'), 'utf8')).toBe('{}');
  });
});

/** The in-memory cluster's exec, run on this machine with `/data` (the volume's mount) standing for `volume`. */
function execOn(volume: string, seen: string[][]): FakeCluster['execHandler'] {
  return (_pod, _container, command, stdin, stdout) => new Promise((resolve, reject) => {
    seen.push(command);
    // Only the mount point, not a `data` folder inside it (editor/data/User).
    const args = command.map((arg) => arg.replace(/(?<![\w.])\/data\b/g, volume));
    const child = spawn(args[0], args.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    if (stdin) stdin.pipe(child.stdin);
    else child.stdin.end();
    if (stdout) child.stdout.pipe(stdout, { end: false });
    else child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout: Buffer.concat(out), stderr: err }));
  });
}

describe('the files of a server on a cluster', () => {
  let runtime: KubernetesWorkload<FakeCluster> | undefined;
  afterEach(() => runtime?.dispose());

  /** A running editor of server `alpha` whose volume is the folder `volume`. */
  async function running(volume: string, seen: string[][] = []): Promise<{ cluster: FakeCluster; runtime: KubernetesWorkload<FakeCluster> }> {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    cluster.execHandler = execOn(volume, seen);
    const starting = runtime.start({ name: 'alpha', port: 8126 });
    cluster.runEditor((await eventually(() => cluster.pod('devbox-alpha-0'))).metadata!.name!);
    await starting;
    return { cluster, runtime };
  }

  async function volumeWithWork(): Promise<string> {
    const volume = join(root, 'volume');
    const user = join(volume, 'editor', 'data', 'User');
    await fs.mkdir(join(volume, 'workspace', 'src', 'empty'), { recursive: true });
    await fs.mkdir(join(user, 'snippets'), { recursive: true });
    await fs.mkdir(join(user, 'workspaceStorage'), { recursive: true });
    await fs.writeFile(join(volume, 'workspace', 'src', 'main.py'), 'print("hi")\n');
    await fs.writeFile(join(volume, 'workspace', 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await fs.writeFile(join(volume, 'workspace', 'line\nbreak.txt'), 'odd name');
    await fs.symlink('/etc/passwd', join(volume, 'workspace', 'link'));
    await fs.utimes(join(volume, 'workspace', 'src', 'main.py'), 1_700_000_000, 1_700_000_000);
    await fs.writeFile(join(user, 'settings.json'), '{"editor.fontSize": 14}');
    await fs.writeFile(join(user, 'snippets', 'py.json'), '{}');
    await fs.writeFile(join(user, 'workspaceStorage', 'state.db'), 'cache');
    return volume;
  }

  it("copies a running editor's workspace and kept User files out of its volume, with modes, times, links and odd names, and release removes the copy", async () => {
    const volume = await volumeWithWork();
    const { cluster } = await running(volume);
    const files = await runtime!.storage.openForSnapshot('alpha', optionsFor());
    expect(files.live).toBe(false);
    expect(files.workspace.startsWith(join(root, 'staging'))).toBe(true);
    expect(await fs.readFile(join(files.workspace, 'src', 'main.py'), 'utf8')).toBe('print("hi")\n');
    expect((await fs.stat(join(files.workspace, 'src', 'main.py'))).mtimeMs).toBe(1_700_000_000_000);
    expect((await fs.stat(join(files.workspace, 'run.sh'))).mode & 0o777).toBe(0o755);
    expect(await fs.readFile(join(files.workspace, 'line\nbreak.txt'), 'utf8')).toBe('odd name');
    expect(await fs.readlink(join(files.workspace, 'link'))).toBe('/etc/passwd');
    expect((await fs.stat(join(files.workspace, 'src', 'empty'))).isDirectory()).toBe(true);
    expect((await fs.readdir(files.user)).sort()).toEqual(['settings.json', 'snippets']);
    // Through the running editor's own container: no helper Pod.
    expect(cluster.callsOf('exec')).toEqual(['Pod/devbox-alpha-0']);
    expect(cluster.pod('devbox-alpha-storage')).toBeUndefined();
    await files.release();
    expect(await fs.readdir(join(root, 'staging'))).toEqual([]);
  });

  it('gives empty folders, asking the cluster nothing, for a server that never ran', async () => {
    const cluster = new FakeCluster();
    runtime = await runtimeOn(cluster);
    const files = await runtime.storage.openForSnapshot('never', optionsFor());
    expect(await fs.readdir(files.workspace)).toEqual([]);
    expect(await fs.readdir(files.user)).toEqual([]);
    expect(cluster.callsOf('exec')).toEqual([]);
    expect(cluster.callsOf('apply')).toEqual([]);
    await files.release();
  });

  it("puts a restore's folders back into the volume: the workspace whole, each kept User file, the editor's other files left, no staging left behind", async () => {
    const volume = await volumeWithWork();
    await running(volume);
    const files = await runtime!.storage.openForRestore('alpha', optionsFor());
    // What a restore does: writes files into the copy of what is there.
    await fs.writeFile(join(files.workspace, 'restored.txt'), 'from the snapshot');
    await fs.writeFile(join(files.workspace, 'src', 'main.py'), 'print("older")\n');
    await fs.writeFile(join(files.user, 'keybindings.json'), '[]');
    await files.commit(AbortSignal.timeout(30_000));
    await files.release();
    expect(await fs.readFile(join(volume, 'workspace', 'restored.txt'), 'utf8')).toBe('from the snapshot');
    expect(await fs.readFile(join(volume, 'workspace', 'src', 'main.py'), 'utf8')).toBe('print("older")\n');
    expect(await fs.readFile(join(volume, 'workspace', 'line\nbreak.txt'), 'utf8')).toBe('odd name');
    expect(await fs.readlink(join(volume, 'workspace', 'link'))).toBe('/etc/passwd');
    const user = join(volume, 'editor', 'data', 'User');
    expect(await fs.readFile(join(user, 'keybindings.json'), 'utf8')).toBe('[]');
    expect(await fs.readFile(join(user, 'settings.json'), 'utf8')).toBe('{"editor.fontSize": 14}');
    expect(await fs.readFile(join(user, 'workspaceStorage', 'state.db'), 'utf8')).toBe('cache');
    expect((await fs.readdir(volume)).sort()).toEqual(['editor', 'workspace']);
    expect(await fs.readdir(join(root, 'staging'))).toEqual([]);
  });

  it('leaves the volume as it was when putting the files back fails in the container', async () => {
    const volume = await volumeWithWork();
    const seen: string[][] = [];
    const { cluster } = await running(volume, seen);
    const files = await runtime!.storage.openForRestore('alpha', optionsFor());
    await fs.writeFile(join(files.workspace, 'restored.txt'), 'from the snapshot');
    const real = cluster.execHandler;
    // The volume is full: the unpacking in the container fails.
    cluster.execHandler = (pod, container, command, stdin, stdout) => real(pod, container, command.map((arg) => arg.replace(/\| tar -x -f - -C (\S+)/, '| { cat > /dev/null; echo "No space left on device" >&2; exit 2; }')), stdin, stdout);
    await expect(files.commit(AbortSignal.timeout(30_000))).rejects.toThrow(/No space left on device/);
    await files.release();
    expect((await fs.readdir(join(volume, 'workspace'))).sort()).toEqual(['line\nbreak.txt', 'link', 'run.sh', 'src']);
    expect((await fs.readdir(volume)).sort()).toEqual(['editor', 'workspace']);
  });
});
