// Stopping editors: SIGTERM to the process group, SIGKILL after the grace period, and only an
// editor /proc shows this service launched for that very server (stopEditor checks).
import { discoverEditors, groupIsEditorOf, verifyEditor } from './ownership.ts';
import { descendants, groupExists, isAlive, type ProcessIdentity } from './procfs.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stops server `name`'s editor: only if its leader is, right now, that editor (or, the leader
 * gone, a live member of its group still is). False, and nothing signalled, otherwise.
 */
export async function stopEditor(name: string, identity: ProcessIdentity, graceMs: number, editorsDir: string): Promise<boolean> {
  const ours = isAlive(identity) ? verifyEditor(identity, name, editorsDir) !== undefined : groupIsEditorOf(identity.pid, name, editorsDir);
  if (!ours) return false;
  await stopProcessGroup(identity, graceMs);
  return true;
}

/**
 * SIGTERM to the group, SIGKILL after the grace period, then any descendant that left the group.
 * Checks nothing: only for a process the caller launched itself (stopEditor checks ownership).
 */
export async function stopProcessGroup(identity: ProcessIdentity, graceMs: number): Promise<void> {
  const family = isAlive(identity) ? descendants(identity.pid) : [];
  signalGroup(identity.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (groupExists(identity.pid) && Date.now() < deadline) await sleep(25);
  if (groupExists(identity.pid)) signalGroup(identity.pid, 'SIGKILL');
  for (const p of family) if (isAlive(p)) signal(p.pid, 'SIGKILL');
  const killDeadline = Date.now() + 5000;
  while ((groupExists(identity.pid) || family.some(isAlive)) && Date.now() < killDeadline) await sleep(20);
}

/** Stops every editor launched under editorsDir. */
export async function stopAllEditors(editorsDir: string, graceMs: number): Promise<void> {
  await Promise.all(discoverEditors(editorsDir).map((e) => stopEditor(e.name, e.identity, graceMs, editorsDir)));
}

function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  signal(-pgid, sig);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}
