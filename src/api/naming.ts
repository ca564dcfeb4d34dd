// Names the API makes: a manifest name from a display name, and restart request stamps.

/** A DNS-1123 label made from a display name: "Data Pipeline!" → "data-pipeline". */
export function slugify(displayName: string): string {
  const slug = displayName.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50);
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
