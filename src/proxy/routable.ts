// Which editor a request for `/vscode/{port}/…` may reach: the proxy's routing policy, read from
// the index (the server on the port, its phase, its running editor, its wake mark). Nothing else
// in the service routes: the API and the wake page ask here too.
import type { PortClaims } from '../index/commands.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { EditorEndpoint } from '../runtime/interface.ts';

export type RoutingIndex = Pick<ServerIndex, 'serverNamed' | 'endpointOf' | 'waking'>;

/**
 * Where the managed editor on the port answers while it may be routed to, else undefined: it is
 * Running, or Starting and not woken after an idle stop (a woken editor shows the starting page
 * until it answers, so the person never sees a half-started workbench).
 */
export function routableEndpoint(index: RoutingIndex, ports: Pick<PortClaims, 'owner'>, port: number): EditorEndpoint | undefined {
  const name = ports.owner(port);
  if (name === undefined) return undefined;
  const phase = index.serverNamed(name)?.status?.phase;
  const routable = phase === 'Running' || (phase === 'Starting' && !index.waking(name));
  return routable ? index.endpointOf(name) : undefined;
}
