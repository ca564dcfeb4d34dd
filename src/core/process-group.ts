// Stopping a process group this service launched itself (an editor, the assistant router):
// SIGTERM to the group, SIGKILL after the grace period.
import { descendants, groupExists, isAlive, type ProcessIdentity } from './procfs.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
