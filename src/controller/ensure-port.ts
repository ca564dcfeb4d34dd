// Step: the server's port: the spec's, else the one already held, else a fresh one from the range.
import type { EditorServer } from '../manifests/types.ts';
import type { ReconcilerDeps } from './context.ts';

/**
 * The port, or what is wrong with it (a message saying what to change). A spec.port that is
 * excluded or another server's is terminal: only a new spec fixes it. A full range may free up.
 */
export async function ensurePort(
  deps: ReconcilerDeps, name: string, server: EditorServer,
): Promise<number | { problem: string; terminal: boolean }> {
  const { ports } = deps;
  const wanted = server.spec.port;
  if (wanted !== undefined) {
    const excluded = ports.excluded(wanted);
    if (excluded !== undefined) return { problem: `spec.port ${wanted} is ${excluded}: choose another port`, terminal: true };
    if (!ports.reserve(name, wanted)) {
      return { problem: `spec.port ${wanted} is already used by server "${ports.owner(wanted)}": choose another port`, terminal: true };
    }
    return wanted;
  }
  const recorded = server.status?.port;
  if (recorded !== undefined && ports.reserve(name, recorded)) return recorded;
  const { min, max } = deps.config.ports;
  return (await ports.allocate(name))
    ?? { problem: `no free port left in ${min}-${max}: stop or delete a server, or widen ports in the config`, terminal: false };
}
