// Sharing a server with named people: who has access (GET /servers/{id}/access), share, revoke,
// and who the dashboard's user is (GET /me), asked once per page load.
import { request } from './http.ts';
import type * as api from './openapi-types.ts';

/** Who has access to a server, and what the requester may do about it. */
export type AccessAnswer = api.AccessEnvelope;
export type AccessView = api.AccessEnvelope['data'];
/** The dashboard's user as the service sees them. */
export type Me = api.Me['data'];

const path = (id: string, rest = '') => `servers/${encodeURIComponent(id)}/access${rest}`;

export const getAccess = (id: string) => request<AccessAnswer>('GET', path(id));
export const shareServer = (id: string, person: string) => request<AccessAnswer>('POST', path(id), { person });
export const revokeAccess = (id: string, person: string) => request<AccessAnswer>('DELETE', path(id, `/${encodeURIComponent(person)}`));

let me: Promise<Me | undefined> | undefined;

/** GET /me, asked once: undefined when it could not be read (the marks it feeds are then left out). */
export function getMe(): Promise<Me | undefined> {
  me ??= request<api.Me>('GET', 'me').then((answer) => answer.data, () => {
    me = undefined;
    return undefined;
  });
  return me;
}
