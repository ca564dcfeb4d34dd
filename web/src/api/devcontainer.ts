// What came from a server's devcontainer.json (the record's `devcontainer`, status.devcontainer) and
// the ports it forwards through the proxy (GET /servers/{id}/ports).
import { request } from './http.ts';
import type * as api from './openapi-types.ts';

export type Devcontainer = api.Devcontainer;
export type DevcontainerPlan = api.DevcontainerPlan;
export type LifecycleState = api.DevcontainerLifecycleState;
export type LifecycleName = api.DevcontainerPlan['waitFor'];

/** Each lifecycle command's place in the order they run (the type makes sure none is left out). */
const PLACE = {
  onCreateCommand: 0, updateContentCommand: 1, postCreateCommand: 2, postStartCommand: 3, postAttachCommand: 4,
} satisfies Record<LifecycleName, number>;

/** The lifecycle commands, in the order they run. */
export const LIFECYCLE_ORDER = (Object.keys(PLACE) as LifecycleName[]).sort((a, b) => PLACE[a] - PLACE[b]);

/** When a command runs: the first three once per workspace, then every start, then when a person opens the editor. */
export function whenRun(name: LifecycleName): 'once per workspace' | 'every start' | 'when opened' {
  return PLACE[name] <= PLACE.postCreateCommand ? 'once per workspace' : name === 'postStartCommand' ? 'every start' : 'when opened';
}

/** Whether the editor waits for `name` before it starts (it waits for waitFor and what comes before it). */
export const waitedFor = (name: LifecycleName, waitFor: LifecycleName) => PLACE[name] <= PLACE[waitFor];

/** One port of GET /servers/{id}/ports; `listening` undefined when not known (the plan's ports, before the listing answered). */
export type ForwardedPortView = Omit<api.ServerPorts[number], 'listening' | 'label' | 'protocol' | 'onAutoForward'> & {
  label?: string | null;
  protocol?: 'http' | 'https';
  onAutoForward?: string;
  listening?: boolean;
};

/** GET /servers/{id}/ports: a bare array. */
export async function getPorts(id: string): Promise<ForwardedPortView[]> {
  return request<api.ServerPorts>('GET', `servers/${encodeURIComponent(id)}/ports`);
}
