// A folder's identity (device and inode) while it is a folder, so a folder that vanished or was
// replaced by another (a failed mount, a git checkout) is told from a file that went.
import { stat } from 'node:fs/promises';

/** Looks at each folder under way, by path: every caller meanwhile shares it. */
const looking = new Map<string, Promise<string | undefined>>();

/**
 * The folder's device and inode while it is a folder; undefined while it is missing. Callers at
 * the same moment share one stat (every reconcile asks, and at a landing thousands run at once).
 */
export function folderIdentity(dir: string): Promise<string | undefined> {
  let look = looking.get(dir);
  if (!look) {
    look = stat(dir).then((stats) => (stats.isDirectory() ? `${stats.dev}:${stats.ino}` : undefined), () => undefined)
      .finally(() => looking.delete(dir));
    looking.set(dir, look);
  }
  return look;
}
