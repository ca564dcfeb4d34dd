// The editor Pod's init container, and what it reports. Before the editor starts, the container
// makes the volume's folders and the editor's config (once), then writes what the volume holds to
// its termination message, which the kubelet puts into the Pod's status: whether the workspace
// has anything in it, and the extensions installed. The runtime reads that from its watch of the
// Pod, so knowing a running editor's storage costs no exec (only a change does: an install, a
// settings write, a source put into an empty workspace).
import type { V1Pod } from '@kubernetes/client-node';
import { extensionFolder } from '../../extensions/extensions-folder.ts';
import type { InstalledExtensions } from '../interface.ts';
import { CONFIG_PATH, EDITOR_ROOT, EXTENSIONS_DIR, PREPARE_CONTAINER, USER_DATA_DIR, WORKSPACE } from './names.ts';

/** The last line of a whole report: a message the kubelet cut (it keeps 4096 bytes) lacks it. */
const END = '#end';

/**
 * Folders, config, then the report: `#workspace empty|used`, then `#list` (the folders
 * extensions.json names: VS Code keeps an uninstalled one's folder until it cleans up) or
 * `#folders` (no list: every folder with a package.json) or `#unknown` (a list without folder
 * names, from an older editor), then one folder per line, then `#end`.
 */
export const PREPARE_SCRIPT = `mkdir -p ${WORKSPACE} ${USER_DATA_DIR}/User ${EXTENSIONS_DIR} ${EDITOR_ROOT}/home || exit 1
[ -e ${CONFIG_PATH} ] || printf 'auth: none\\ncert: false\\n' > ${CONFIG_PATH}
{
  if [ -n "$(ls -A ${WORKSPACE} | head -n 1)" ]; then echo '#workspace used'; else echo '#workspace empty'; fi
  list=${EXTENSIONS_DIR}/extensions.json
  if [ -f "$list" ] && grep -q '"relativeLocation"' "$list"; then
    echo '#list'; grep -o '"relativeLocation":"[^"]*"' "$list" | sed 's/.*:"//; s/"$//'
  elif [ -f "$list" ] && grep -q '"identifier"' "$list"; then
    echo '#unknown'
  else
    echo '#folders'
    for d in ${EXTENSIONS_DIR}/*/; do if [ -f "$d/package.json" ]; then basename "$d"; fi; done
  fi
  echo '${END}'
} > /dev/termination-log
exit 0`;

/** What an editor Pod's init container said of its volume; undefined where it said nothing usable. */
export interface PreparedReport {
  workspaceEmpty: boolean;
  extensions: InstalledExtensions | undefined;
}

/** A platform suffix of an extension's folder (ms-python.python-2024.1.0-linux-x64), not part of its version. */
const PLATFORM = /-(?:(?:linux|alpine|darwin|win32)-[a-z0-9]+|web|universal)$/;

/** The report of the Pod's init container, once it has ended and said it whole. */
export function preparedReport(pod: V1Pod): PreparedReport | undefined {
  const status = pod.status?.initContainerStatuses?.find((c) => c.name === PREPARE_CONTAINER);
  const message = status?.state?.terminated?.exitCode === 0 ? status.state.terminated.message : undefined;
  const lines = message?.split('\n').map((l) => l.trim()).filter(Boolean) ?? [];
  if (lines.at(-1) !== END || !/^#workspace (empty|used)$/.test(lines[0] ?? '')) return undefined;
  const workspaceEmpty = lines[0] === '#workspace empty';
  if (lines[1] !== '#list' && lines[1] !== '#folders') return { workspaceEmpty, extensions: undefined };
  const extensions: InstalledExtensions = new Map();
  for (const line of lines.slice(2, -1)) {
    const found = extensionFolder(line.replace(PLATFORM, ''));
    if (found) extensions.set(found.id, found.version);
  }
  return { workspaceEmpty, extensions };
}
