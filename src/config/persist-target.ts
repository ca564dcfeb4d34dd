// Where snapshots go, as an operator writes it (DEVBOX_PERSIST_TO, persistence.target): a Unity
// Catalog volume in the Databricks CLI's form, or an absolute folder. Read once, when the settings
// are loaded; every part after that takes the typed PersistTarget, never the text.
import { isAbsolute } from 'node:path';

export type PersistTarget =
  /** `path`: `/Volumes/<catalog>/<schema>/<volume>[/<prefix>…]`, without a trailing slash. */
  | { kind: 'volume'; path: string }
  | { kind: 'folder'; dir: string };

export type VolumeTarget = Extract<PersistTarget, { kind: 'volume' }>;

const ACCEPTED = 'give dbfs:/Volumes/<catalog>/<schema>/<volume>/<prefix> (a Unity Catalog volume, '
  + 'as the Databricks CLI writes it; /Volumes/… works too) or an absolute folder path such as /mnt/keep';

/** Characters a volume path may not hold: they would change the request URL or are not printable. */
const UNSAFE = /[\u0000-\u001f\u007f\\?#%]/;

/**
 * `dbfs:/Volumes/main/team/devbox/prod` and `/Volumes/main/team/devbox/prod` → a volume;
 * `/mnt/keep` → a folder. Anything else throws an Error that says which forms are accepted.
 */
export function parsePersistTarget(text: string): PersistTarget {
  const given = text.trim();
  const refuse = (why: string): never => {
    throw new Error(`persistence target "${text}" ${why}: ${ACCEPTED}`);
  };
  if (given === '') refuse('is empty');
  let path = given;
  if (/^dbfs:/i.test(given)) {
    path = given.slice('dbfs:'.length);
    if (!/^\/Volumes(\/|$)/.test(path)) refuse('is a DBFS path outside /Volumes (the DBFS root and mounts are not supported)');
  } else if (/^[a-z][a-z0-9+.-]*:/i.test(given)) {
    refuse(`uses the scheme "${/^[^:]*/.exec(given)![0]}:", which the service cannot write to`);
  }
  if (!isAbsolute(path)) refuse('is a relative path');
  const segments = path.split('/').filter((segment) => segment !== '');
  if (segments.some((segment) => segment === '..' || segment === '.')) refuse('holds a "." or ".." segment; write the path without them');
  if (segments[0] !== 'Volumes') return { kind: 'folder', dir: `/${segments.join('/')}` };

  if (segments.length < 4) {
    const missing = ['catalog', 'schema', 'volume'].slice(segments.length - 1).join(', ');
    refuse(`names no ${missing}`);
  }
  if (segments.some((segment) => UNSAFE.test(segment))) refuse('holds a control character, "\\", "?", "#" or "%"');
  return { kind: 'volume', path: `/${segments.join('/')}` };
}

/** `/Volumes/main/team/devbox/prod` → `/Volumes/main/team/devbox`: the volume itself. */
export function volumeOf(path: string): string {
  return path.split('/').slice(0, 5).join('/');
}
