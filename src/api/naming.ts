// Names the API makes: a manifest name from a display name, a label that tells apart servers
// sharing a display name, and restart request stamps.
import { displayNameOf, type EditorServer } from '../manifests/types.ts';

/** A DNS-1123 label made from a display name: "Data Pipeline!" → "data-pipeline". */
export function slugify(displayName: string): string {
  const lower = displayName.toLowerCase();
  // NFKD leaves ASCII as it is; skipping it there leaves ICU's normalization data unread (memory at rest).
  const slug = (/^[\x00-\x7f]*$/.test(lower) ? lower : lower.normalize('NFKD')).replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50);
  return slug.replace(/-+$/, '') || 'server';
}

let lastStamp = '';
/** A restart request stamp, unique even for two requests in the same millisecond. */
export function restartStamp(): string {
  let stamp = new Date().toISOString();
  if (stamp <= lastStamp) stamp = new Date(Date.parse(lastStamp) + 1).toISOString();
  lastStamp = stamp;
  return stamp;
}

/** Two display names a person would take for the same one: case and spacing aside (the dashboard's rule too, web/src/components/names.tsx). */
const sameKey = (name: string) => name.trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The name a person knows the server by, with its manifest name beside it when another server
 * shares that display name ("Hello (hello-2)"), as the dashboard shows it.
 */
export function distinctLabel(server: EditorServer, others: Iterable<{ name: string; server?: EditorServer }>): string {
  const display = displayNameOf(server);
  const key = sameKey(display);
  for (const other of others) {
    if (other.name !== server.metadata.name && other.server && sameKey(displayNameOf(other.server)) === key) return `${display} (${server.metadata.name})`;
  }
  return display;
}
