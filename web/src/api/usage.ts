// Usage over time, as the service keeps it (GET /servers/{id}/usage, GET /usage): the charts'
// data. `window` is a duration the API reads (`30m`, `6h`); left out, the whole history kept.
import { request } from './http.ts';
import type * as api from './openapi-types.ts';

export type ServerUsage = api.ServerUsage['data'];
export type FleetUsage = api.FleetUsage['data'];

const query = (window?: string) => (window ? `?window=${encodeURIComponent(window)}` : '');

export async function getServerUsage(id: string, window?: string): Promise<ServerUsage> {
  return (await request<api.ServerUsage>('GET', `servers/${encodeURIComponent(id)}/usage${query(window)}`)).data;
}

export async function getFleetUsage(window?: string): Promise<FleetUsage> {
  return (await request<api.FleetUsage>('GET', `usage${query(window)}`)).data;
}
