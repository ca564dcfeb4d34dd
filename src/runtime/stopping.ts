// Stopping editors: SIGTERM to the process group, SIGKILL after the grace period, and only an
// editor /proc shows this service launched for that very server (stopEditor checks).
import { discoverEditors, groupIsEditorOf, verifyEditor } from './ownership.ts';
import { stopProcessGroup } from '../core/process-group.ts';
import { isAlive, readStat, type ProcessIdentity } from '../core/procfs.ts';

/**
 * Stops server `name`'s editor: only if its leader is, right now, that editor (or, the leader
 * gone, a live member of its group still is). False, and nothing signalled, otherwise.
 */
export async function stopEditor(name: string, identity: ProcessIdentity, graceMs: number, editorsDir: string): Promise<boolean> {
  // Linux gives a pid to no new process while it still names a process group: a pid running with
  // another start time means the reference's group is gone, and group `pid` is someone else's.
  const now = readStat(identity.pid);
  if (now && now.startTicks !== identity.startTicks) return false;
  const ours = isAlive(identity) ? verifyEditor(identity, name, editorsDir) !== undefined : groupIsEditorOf(identity.pid, name, editorsDir);
  if (!ours) return false;
  await stopProcessGroup(identity, graceMs);
  return true;
}

/** Stops every editor launched under editorsDir. */
export async function stopAllEditors(editorsDir: string, graceMs: number): Promise<void> {
  await Promise.all(discoverEditors(editorsDir).map((e) => stopEditor(e.name, e.identity, graceMs, editorsDir)));
}
