// GET /servers?limit=…&continue=…&owner=…&status=…&name_prefix=…: the list a page at a time, and
// filtered, for fleets of thousands. Additive to the interface: without any of these the answer is
// the whole array, as before. Pages walk the servers in manifest-name order (unique and stable),
// so a `continue` token (the last name of the page, opaque to clients) resumes exactly after it
// whatever was added or removed meanwhile, as Kubernetes' list paging does. Each record's bytes are
// the ServerFeed's, made once per change: a page costs its records, not the fleet.
import { apiError } from '../core/error-catalogue.ts';
import type { ServerIndex } from '../index/server-index.ts';
import { displayNameOf, type EditorServer } from '../manifests/types.ts';
import { ownerOf } from './access.ts';
import { statusOf } from './views.ts';

export const MAX_PAGE = 1000;
const STATUS_WORDS = new Set(['running', 'stopped', 'starting', 'stopping', 'failed']);
/** The query keys of a page; any of them makes the request a page or a filtered list. */
export const PAGE_KEYS = ['limit', 'continue', 'owner', 'status', 'name_prefix'] as const;

export interface PageQuery {
  /** At most this many records (absent: every one that matches). */
  limit?: number;
  /** The manifest name the previous page ended with. */
  after?: string;
  owner?: string;
  statuses?: Set<string>;
  /** Lower-case prefix of the display name or of the manifest name. */
  prefix?: string;
}

export interface Page {
  /** The JSON array of the page's records. */
  body: string;
  /** The token for the next page; absent when this page reached the end. */
  next?: string;
}

type Query = Record<string, unknown>;

const one = (query: Query, key: string): string | undefined => {
  const value = query[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw apiError('INVALID_PAGE', { param: key, problem: 'is given more than once: give it once' });
  return value;
};

/** The page the query asks for, or undefined when it names none of the page keys (the plain list). 400 saying what to change. */
export function parsePageQuery(query: Query): PageQuery | undefined {
  if (!PAGE_KEYS.some((key) => query[key] !== undefined)) return undefined;
  const page: PageQuery = {};
  const limit = one(query, 'limit');
  if (limit !== undefined) {
    const n = Number(limit);
    if (!/^\d+$/.test(limit) || n < 1 || n > MAX_PAGE) {
      throw apiError('INVALID_PAGE', { param: 'limit', problem: `must be a whole number from 1 to ${MAX_PAGE}, not ${JSON.stringify(limit)}` });
    }
    page.limit = n;
  }
  const token = one(query, 'continue');
  if (token !== undefined) {
    const after = Buffer.from(token, 'base64url').toString('utf8');
    if (token === '' || !/^[a-z0-9]([a-z0-9-]{0,251}[a-z0-9])?$/.test(after)) {
      throw apiError('INVALID_PAGE', { param: 'continue', problem: 'is not a token this service gave: use the X-Continue header of the previous page, or leave it out for the first page' });
    }
    page.after = after;
  }
  const owner = one(query, 'owner');
  if (owner !== undefined) page.owner = owner.trim().toLowerCase();
  const status = one(query, 'status');
  if (status !== undefined) {
    const words = status.split(',').map((w) => w.trim());
    const unknown = words.filter((w) => !STATUS_WORDS.has(w));
    if (unknown.length > 0) {
      throw apiError('INVALID_PAGE', { param: 'status', problem: `${JSON.stringify(unknown.join(','))} is not a status: use ${[...STATUS_WORDS].join(', ')} (several with commas)` });
    }
    page.statuses = new Set(words);
  }
  const prefix = one(query, 'name_prefix');
  if (prefix !== undefined) page.prefix = prefix.toLowerCase();
  return page;
}

/** The servers in manifest-name order, sorted again only when a name came or went. */
export class ServerPages {
  readonly #index: Pick<ServerIndex, 'records' | 'on'>;
  readonly #json: (name: string, now: number) => string | undefined;
  #sorted: string[] = [];
  #members = new Set<string>();
  #stale = true;

  /** `json`: a server's record as the list gives it (the ServerFeed's bytes), undefined when it is not listed. */
  constructor(index: Pick<ServerIndex, 'records' | 'on'>, json: (name: string, now: number) => string | undefined) {
    this.#index = index;
    this.#json = json;
    index.on('changed', (name) => {
      if (!this.#members.has(name)) this.#stale = true;
    });
    index.on('deleted', () => (this.#stale = true));
  }

  #names(): string[] {
    const { records } = this.#index;
    // A record primed at start-up is told by no event: a count that differs says so too.
    if (this.#stale || this.#sorted.length !== records.size) {
      this.#sorted = [...records.keys()].sort();
      this.#members = new Set(this.#sorted);
      this.#stale = false;
    }
    return this.#sorted;
  }

  /** The page: records the requester may see (`sees`) and the query matches, after `after`, up to `limit`. */
  page(query: PageQuery, sees?: (server: EditorServer) => boolean, now = Date.now()): Page {
    const names = this.#names();
    const { records } = this.#index;
    let at = query.after === undefined ? 0 : firstAfter(names, query.after);
    const limit = query.limit ?? Infinity;
    const parts: string[] = [];
    let last: string | undefined;
    for (; at < names.length && parts.length < limit; at++) {
      const server = records.get(names[at])?.server;
      if (!server?.metadata.uid || (sees && !sees(server)) || !matches(server, query)) continue;
      const json = this.#json(names[at], now);
      if (json === undefined) continue;
      parts.push(json);
      last = names[at];
    }
    const body = `[${parts.join(',')}]`;
    return at < names.length && last !== undefined ? { body, next: Buffer.from(last, 'utf8').toString('base64url') } : { body };
  }
}

function matches(server: EditorServer, query: PageQuery): boolean {
  if (query.statuses && !query.statuses.has(statusOf(server))) return false;
  if (query.owner !== undefined && ownerOf(server) !== query.owner) return false;
  if (query.prefix !== undefined) {
    const display = displayNameOf(server).toLowerCase();
    if (!display.startsWith(query.prefix) && !server.metadata.name.startsWith(query.prefix)) return false;
  }
  return true;
}

/** The index of the first name greater than `name` (binary search). */
function firstAfter(names: string[], name: string): number {
  let low = 0;
  let high = names.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (names[mid] <= name) low = mid + 1;
    else high = mid;
  }
  return low;
}
