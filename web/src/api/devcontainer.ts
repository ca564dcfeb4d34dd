// What came from a server's devcontainer.json (the record's `devcontainer`, status.devcontainer) and
// the ports it forwards through the proxy (GET /servers/{id}/ports).
import type { DevcontainerStatus } from '../../../src/devcontainer/types.ts';
import { request } from './http.ts';
import type { ServerRecord } from './types.ts';

export type { DevcontainerPlan, DevcontainerStatus, LifecycleName, LifecycleState } from '../../../src/devcontainer/types.ts';
export { LIFECYCLE_ORDER, ONCE_PER_WORKSPACE } from '../../../src/devcontainer/types.ts';

/** The record's `devcontainer`: null (or absent) until the controller has looked at the workspace. */
export function devcontainerOf(server: ServerRecord): DevcontainerStatus | null {
  return (server as ServerRecord & { devcontainer?: DevcontainerStatus | null }).devcontainer ?? null;
}

/** One port of GET /servers/{id}/ports: declared in devcontainer.json, listened on now, or both. */
export interface ForwardedPortView {
  port: number;
  label?: string;
  protocol?: 'http' | 'https';
  onAutoForward?: string;
  declared: boolean;
  /** undefined: not known (the listing could not be read). */
  listening?: boolean;
  /** The proxy's path for it, under the editor's address. */
  url: string;
}

/** GET /servers/{id}/ports. */
export async function getPorts(id: string): Promise<ForwardedPortView[]> {
  const answer = await request<{ data: ForwardedPortView[] | { ports: ForwardedPortView[] } } | ForwardedPortView[]>('GET', `servers/${encodeURIComponent(id)}/ports`);
  const data = Array.isArray(answer) ? answer : answer.data;
  return Array.isArray(data) ? data : data.ports;
}
