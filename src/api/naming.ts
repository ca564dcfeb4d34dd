// Names the API makes: a manifest name from a display name, and restart request stamps.

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
