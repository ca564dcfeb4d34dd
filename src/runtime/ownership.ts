// Which processes are this service's editors. A process counts as the editor of server <name>
// only when /proc says so: its command line has `--user-data-dir <editorsDir>/<name>/user-data`
// and its environment DEVBOX_SERVER_NAME=<name>, as launch() set them, and its start time
// matches. A pid or start time written in a file is never enough: files can be copied or forged.
import { SERVER_NAME_VARIABLE } from '../core/child-env.ts';
import { environValue, findGroupLeaders, groupLeader } from '../core/leftovers.ts';
import { listPids, readCmdline, readStat, type ProcessIdentity } from '../core/procfs.ts';

/** An editor found running on this machine, launched by this service's data folder. */
export interface DiscoveredEditor {
  name: string;
  port: number | undefined;
  identity: ProcessIdentity;
}

const withSlash = (dir: string) => (dir.endsWith('/') ? dir : dir + '/');

/** Reads the server name and port back from an editor's command line; undefined if it is not one of editorsDir's. */
export function parseEditorCmdline(argv: string[], editorsDir: string): { name: string; port: number | undefined } | undefined {
  const dataIndex = argv.indexOf('--user-data-dir');
  const dataDir = dataIndex >= 0 ? argv[dataIndex + 1] : undefined;
  const marker = withSlash(editorsDir);
  if (!dataDir?.startsWith(marker)) return undefined;
  const name = dataDir.slice(marker.length).split('/')[0];
  // Exactly the layout's folder for that name (DataLayout.editor(name).userDataDir).
  if (name === '' || name === '.' || name === '..' || dataDir !== `${marker}${name}/user-data`) return undefined;
  const bindIndex = argv.indexOf('--bind-addr');
  const port = bindIndex >= 0 ? Number(argv[bindIndex + 1]?.split(':').pop()) : NaN;
  return { name, port: Number.isInteger(port) ? port : undefined };
}

/** The server a live process was launched for (command line and environment agree), whatever its group. */
function serverOf(pid: number, editorsDir: string): { name: string; port: number | undefined } | undefined {
  const parsed = parseEditorCmdline(readCmdline(pid), editorsDir);
  if (!parsed || environValue(pid, SERVER_NAME_VARIABLE) !== parsed.name) return undefined;
  return parsed;
}

/**
 * The editor this pid is, if it is one launched under editorsDir: a live group leader (stop
 * signals its whole group) whose command line and environment name the same server.
 */
export function editorOf(pid: number, editorsDir: string): DiscoveredEditor | undefined {
  const leader = groupLeader(pid, (p) => serverOf(p, editorsDir));
  return leader && { ...leader.claimed, identity: leader.identity };
}

/** The editor, when this identity is, right now, the one this service launched for server `name`. */
export function verifyEditor(identity: ProcessIdentity, name: string, editorsDir: string): DiscoveredEditor | undefined {
  const editor = editorOf(identity.pid, editorsDir);
  return editor?.name === name && editor.identity.startTicks === identity.startTicks ? editor : undefined;
}

/** True while a live member of the group (its leader gone) is still server `name`'s editor or one of its children. */
export function groupIsEditorOf(pgid: number, name: string, editorsDir: string): boolean {
  return listPids().some((pid) => {
    const stat = readStat(pid);
    return stat?.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X' && serverOf(pid, editorsDir)?.name === name;
  });
}

/** Editors running on this machine that this service launched with this editorsDir. */
export function discoverEditors(editorsDir: string): DiscoveredEditor[] {
  return findGroupLeaders((pid) => serverOf(pid, editorsDir)).map(({ identity, claimed }) => ({ ...claimed, identity }));
}
