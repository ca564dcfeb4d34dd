// A server's volume as folders on this machine, for persistence: its workspace and the kept files
// of the editor's User folder go out as one tar stream through exec in a container that mounts
// the volume (the running editor's, or the storage helper's), straight into a local tar that
// unpacks them into a staging folder: nothing holds the whole workspace in memory. A restore's
// folders go back as a tar of known length (the exec protocol cannot close stdin), unpacked
// beside the workspace in the volume and moved into place whole, so an interrupted copy never
// leaves half a file where the editor reads it.
import { execa } from 'execa';
import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { FilesOptions, RestoreFiles, ServerFiles } from '../editor-storage.ts';
import type { ExecResult } from './cluster-api.ts';
import { DATA_ROOT, USER_DATA_DIR, WORKSPACE } from './names.ts';

/** Runs a command in a container that mounts the server's volume. */
export type RunInVolume = (command: string[], options: { stdin?: Readable; stdout?: Writable; signal?: AbortSignal }) => Promise<ExecResult>;

/** The workspace and the User folder, relative to the volume's root (and to the staging folder). */
const WORKSPACE_PATH = WORKSPACE.slice(DATA_ROOT.length + 1);
const USER_PATH = `${USER_DATA_DIR.slice(DATA_ROOT.length + 1)}/User`;
const PLAIN_NAME = /^[A-Za-z0-9._-]+$/;

/**
 * Copies the server's files out of its volume into a new folder under `options.stagingDir`.
 * `run` undefined: the server has no volume yet, and its folders are empty.
 */
export async function copyOut(run: RunInVolume | undefined, name: string, options: FilesOptions): Promise<ServerFiles> {
  const { signal } = options;
  const userFiles = plainNames(options.userFiles);
  await fs.mkdir(options.stagingDir, { recursive: true });
  const dir = await fs.mkdtemp(join(options.stagingDir, `${name}-`));
  const files: ServerFiles = {
    workspace: join(dir, WORKSPACE_PATH), user: join(dir, USER_PATH), live: false,
    release: () => fs.rm(dir, { recursive: true, force: true }).catch(() => undefined),
  };
  try {
    if (run) {
      // The workspace is always there to pack (the editor's first start makes it anyway), so the stream is never empty.
      const script = [
        `cd ${DATA_ROOT} && mkdir -p ${WORKSPACE_PATH} || exit 5`,
        `set -- ${WORKSPACE_PATH}`,
        `for f in ${userFiles.join(' ')}; do if [ -e "${USER_PATH}/$f" ] || [ -L "${USER_PATH}/$f" ]; then set -- "$@" "${USER_PATH}/$f"; fi; done`,
        'exec tar -c -f - "$@"',
      ].join('\n');
      const unpack = execa('tar', ['-x', '-p', '-f', '-', '-C', dir, '--no-same-owner'], { cancelSignal: signal, stdin: 'pipe', stdout: 'ignore', stderr: 'pipe', buffer: { stderr: true } });
      // A local tar that ends early (a disk full) must not leave the exec writing into a closed pipe.
      unpack.stdin!.on('error', () => undefined);
      // The local tar ends with its input, whatever became of the exec, and is always waited for.
      const copying = run(['sh', '-c', script], { stdout: unpack.stdin!, signal }).finally(() => unpack.stdin!.end());
      const [copied, unpacked] = await Promise.allSettled([copying, unpack]);
      if (copied.status === 'rejected') throw copied.reason;
      const { code, stderr } = copied.value;
      // GNU tar says 1 when a file changed while it was read (an editor at work): the copy is still whole.
      if (code !== 0 && code !== 1) throw new Error(`copying the files of ${name} out of its volume failed (exit ${code}): ${stderr.trim()}`);
      if (unpacked.status === 'rejected') {
        const reason = unpacked.reason as { stderr?: string; message: string };
        throw new Error(`unpacking the files of ${name} copied out of its volume failed: ${String(reason.stderr || reason.message).trim()}`);
      }
    }
    await fs.mkdir(files.workspace, { recursive: true });
    await fs.mkdir(files.user, { recursive: true });
    return files;
  } catch (error) {
    await files.release();
    throw error;
  }
}

/** The copy made by copyOut, with a commit that puts its content back into the volume. */
export function withCommit(files: ServerFiles, run: RunInVolume, name: string, options: FilesOptions): RestoreFiles {
  const userFiles = plainNames(options.userFiles);
  const commit = async (signal: AbortSignal): Promise<void> => {
    const dir = files.workspace.slice(0, -(WORKSPACE_PATH.length + 1));
    const archive = `${dir}.tar`;
    const staging = `${DATA_ROOT}/.restore-${randomBytes(4).toString('hex')}`;
    try {
      await execa('tar', ['-c', '-f', archive, '-C', dir, '--owner=0', '--group=0', '--numeric-owner', WORKSPACE_PATH, USER_PATH], { cancelSignal: signal });
      const size = (await fs.stat(archive)).size;
      const moveIn = [
        'set -e',
        `mkdir -p ${staging} ${DATA_ROOT}/${USER_PATH}`,
        `head -c ${size} | tar -x -f - -C ${staging}`,
        // The workspace as a whole (the copy holds all of it), each kept User file on its own (the editor's other files stay).
        `if [ -e ${WORKSPACE} ]; then mv ${WORKSPACE} ${staging}/old-workspace; fi`,
        `mv ${staging}/${WORKSPACE_PATH} ${WORKSPACE} || { mv ${staging}/old-workspace ${WORKSPACE}; exit 6; }`,
        `for f in ${userFiles.join(' ')}; do if [ -e "${staging}/${USER_PATH}/$f" ] || [ -L "${staging}/${USER_PATH}/$f" ]; then rm -rf "${DATA_ROOT}/${USER_PATH}/$f"; mv "${staging}/${USER_PATH}/$f" "${DATA_ROOT}/${USER_PATH}/$f"; fi; done`,
        `rm -rf ${staging}`,
      ].join('\n');
      const result = await run(['sh', '-c', moveIn], { stdin: createReadStream(archive), signal }).catch(async (error) => {
        await run(['rm', '-rf', staging], {}).catch(() => undefined);
        throw error;
      });
      if (result.code !== 0) {
        await run(['rm', '-rf', staging], {}).catch(() => undefined);
        throw new Error(`putting the restored files of ${name} into its volume failed (exit ${result.code}): ${result.stderr.trim()}`);
      }
    } finally {
      await fs.rm(archive, { force: true });
    }
  };
  return { ...files, commit };
}

/** The kept User files' names go into a shell script: plain names only. */
function plainNames(names: readonly string[]): string[] {
  const bad = names.find((n) => !PLAIN_NAME.test(n));
  if (bad !== undefined) throw new Error(`a kept User file's name must be plain: ${JSON.stringify(bad)}`);
  return [...names];
}
