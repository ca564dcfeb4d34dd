// A team sharing one app: who is asking (from the identity headers the platform's front proxy
// forwards) and whether they may see and drive a server, under the config's `access` policy.
// The routes, the log streams and the editor proxy all ask here; no other file holds the rule.
import type { IncomingHttpHeaders } from 'node:http';
import { USER_SHAPE, type Config } from '../config/settings.ts';
import { apiError } from '../core/error-catalogue.ts';
import type { EditorServer } from '../manifests/types.ts';

/** The annotation that records who created a server (normalised: trimmed, lower case). */
export const OWNER_ANNOTATION = 'devbox.dev/owner';

/** The headers naming the user, in the order they count: the first one present decides. */
const USER_HEADERS = ['x-forwarded-email', 'x-forwarded-user'] as const;

/**
 * Who is asking. `local`: no identity headers and not deployed, so no one is signed in and the
 * policy does not apply. Otherwise `user` is the signed-in user, undefined when the headers
 * name no one usable (a malformed value, or none where one is required), who then sees nothing.
 */
export type Requester = { readonly local: true } | { readonly local: false; readonly user: string | undefined; readonly problem?: string };

const LOCAL: Requester = { local: true };

/** The owner recorded in a server's manifest, normalised; undefined when none is. */
export function ownerOf(server: EditorServer | undefined): string | undefined {
  const value = server?.metadata.annotations?.[OWNER_ANNOTATION];
  if (typeof value !== 'string') return undefined;
  const owner = normaliseUser(value);
  return owner === '' ? undefined : owner;
}

export const normaliseUser = (value: string): string => value.trim().toLowerCase();

/** The largest spec.access.sharedWith (the manifest schema says the same). */
export const MAX_SHARED_WITH = 100;

/**
 * Each manifest version's sharedWith as a set, built once: a parsed manifest is a new object per
 * version, so its array is the key and an access check costs one lookup.
 */
const sharedSets = new WeakMap<readonly string[], ReadonlySet<string>>();
const NOBODY: ReadonlySet<string> = new Set();

/** The people a server is shared with (spec.access.sharedWith), normalised and without repeats; empty for none. */
export function sharedWithOf(server: EditorServer | undefined): ReadonlySet<string> {
  const list = server?.spec.access?.sharedWith;
  if (!Array.isArray(list) || list.length === 0) return NOBODY;
  let set = sharedSets.get(list);
  if (!set) {
    set = new Set(list.filter((p) => typeof p === 'string').map(normaliseUser).filter((p) => p !== ''));
    sharedSets.set(list, set);
  }
  return set;
}

export interface ServerAccessOptions {
  /** The config in force now (read at every check: the file can change while the service runs). */
  config: () => Pick<Config, 'access' | 'admins'>;
  /** Deployed (identity required): a request without a usable identity is nobody, not local. */
  deployed: boolean;
}

/** The one place that decides who may see and drive which server. */
export class ServerAccess {
  readonly #config: ServerAccessOptions['config'];
  readonly #deployed: boolean;
  /** The admins list last seen, and its normalised set (rebuilt only when the config's list changes). */
  #admins: { list: string[]; set: Set<string> } = { list: [], set: new Set() };

  constructor(options: ServerAccessOptions) {
    this.#config = options.config;
    this.#deployed = options.deployed;
  }

  /** Who sent these headers. */
  requester(headers: IncomingHttpHeaders): Requester {
    for (const name of USER_HEADERS) {
      const raw = headers[name];
      if (typeof raw !== 'string' || raw.trim() === '') continue;
      const user = normaliseUser(raw);
      if (!USER_SHAPE.test(user)) {
        return { local: false, user: undefined, problem: `the ${headerName(name)} header is not an email address or user id (at most 254 characters: letters, digits and . _ % + - ' @)` };
      }
      return { local: false, user };
    }
    return this.#deployed ? { local: false, user: undefined, problem: 'the request names no signed-in user' } : LOCAL;
  }

  /** May `who` see and drive `server` under the policy in force now? */
  allows(who: Requester, server: EditorServer | undefined): boolean {
    const config = this.#config();
    if (config.access !== 'owner' || who.local) return true;
    if (who.user === undefined) return false;
    if (this.#isAdmin(who.user, config.admins)) return true;
    // A server nobody owns (made locally or by hand) is the admins' alone, and those it is shared with.
    return ownerOf(server) === who.user || sharedWithOf(server).has(who.user);
  }

  /**
   * May `who` delete or undelete `server`? Under `access: owner` only its owner and the admins,
   * not those it is shared with; otherwise whoever may drive it.
   */
  manages(who: Requester, server: EditorServer | undefined): boolean {
    const config = this.#config();
    if (config.access !== 'owner' || who.local) return true;
    return this.#ownerOrAdmin(who, server);
  }

  /**
   * May `who` change who has access to `server`? Its owner and the admins, whatever the policy:
   * the list is the owner's word, kept for when `access: owner` applies it.
   */
  changesAccess(who: Requester, server: EditorServer | undefined): boolean {
    return !who.local && this.#ownerOrAdmin(who, server);
  }

  /** Whether `who` is one of the config's admins now. */
  isAdmin(who: Requester): boolean {
    return !who.local && who.user !== undefined && this.isAdminUser(who.user);
  }

  /** The policy in force now. */
  get policy(): Config['access'] {
    return this.#config().access;
  }

  /** Whether requests name who sends them here (deployed, or DEVBOX_REQUIRE_IDENTITY=1): without it, sharing means nothing. */
  get signOn(): boolean {
    return this.#deployed;
  }

  /** `allows` for one request; in `shared` mode true at once, the headers unread. */
  sees(req: { headers: IncomingHttpHeaders }, server: EditorServer | undefined): boolean {
    if (this.#config().access !== 'owner') return true;
    return this.allows(this.requester(req.headers), server);
  }

  /**
   * The filter of a listing for one request: undefined when it may see every server (`shared`
   * mode, no one signed in, an admin), so a listing costs nothing more then.
   */
  filterFor(req: { headers: IncomingHttpHeaders }): ((server: EditorServer | undefined) => boolean) | undefined {
    const config = this.#config();
    if (config.access !== 'owner') return undefined;
    const who = this.requester(req.headers);
    if (who.local || (who.user !== undefined && this.#isAdmin(who.user, config.admins))) return undefined;
    return (server) => this.allows(who, server);
  }

  /**
   * The annotations a server created by this request gets: its owner when someone is signed in
   * (whatever the policy, so a later switch to `owner` finds it), none locally. A malformed
   * identity is refused (400) rather than written into a manifest.
   */
  ownerAnnotations(req: { headers: IncomingHttpHeaders }): Record<string, string> {
    const who = this.requester(req.headers);
    if (who.local) return {};
    if (who.user === undefined) {
      throw apiError('INVALID_IDENTITY', { problem: who.problem ?? 'the request names no signed-in user' });
    }
    return { [OWNER_ANNOTATION]: who.user };
  }

  /** Is this user (as ownerOf gives it: normalised) one of the config's admins now? */
  isAdminUser(user: string): boolean {
    return this.#isAdmin(user, this.#config().admins);
  }

  /** A warning for the log when `access: owner` is set where no one signs in; undefined otherwise. */
  localWarning(): string | undefined {
    if (this.#deployed || this.#config().access !== 'owner') return undefined;
    return 'config: access is "owner", but identity is not required here (not deployed as a Databricks app, or DEVBOX_REQUIRE_IDENTITY=0), '
      + 'so no one signs in: requests without identity headers see and drive every server. Deploy it as a Databricks app '
      + '(or set DEVBOX_REQUIRE_IDENTITY=1 behind a proxy that signs users in) for the policy to hold';
  }

  /** Is `who`, signed in, the server's owner or an admin? */
  #ownerOrAdmin(who: Requester & { local: false }, server: EditorServer | undefined): boolean {
    return who.user !== undefined && (this.isAdminUser(who.user) || ownerOf(server) === who.user);
  }

  #isAdmin(user: string, admins: string[]): boolean {
    if (admins !== this.#admins.list) this.#admins = { list: admins, set: new Set(admins.map(normaliseUser)) };
    return this.#admins.set.has(user);
  }
}

/** X-Forwarded-Email from x-forwarded-email, for messages. */
function headerName(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, dash: string, letter: string) => dash + letter.toUpperCase());
}
