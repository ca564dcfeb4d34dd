// Step: the server's port: the spec's, else the one already held, else a fresh one from the range.
import type { EditorServer } from '../manifests/types.ts';
import type { ReconcilerDeps } from './context.ts';

/** The port, or what is wrong with it (a message saying what to change). */
export async function ensurePort(deps: ReconcilerDeps, name: string, server: EditorServer): Promise<number | string> {
  const { ports } = deps;
  const wanted = server.spec.port;
  if (wanted !== undefined) {
    const excluded = ports.excluded(wanted);
    if (excluded !== undefined) return `spec.port ${wanted} is ${excluded}: choose another port`;
    if (!ports.reserve(name, wanted)) return `spec.port ${wanted} is already used by server "${ports.owner(wanted)}": choose another port`;
    return wanted;
  }
  const recorded = server.status?.port;
  if (recorded !== undefined && ports.reserve(name, recorded)) return recorded;
  const { min, max } = deps.config.ports;
  return (await ports.allocate(name)) ?? `no free port left in ${min}-${max}: stop or delete a server, or widen ports in the config`;
}
