// Quotas per person (the config's capacity.perPerson): how many editors one person's servers may
// run, how many servers they may have, and how much memory their editors may use together. The
// person of a server is its owner (the devbox.dev/owner annotation); servers without one count for
// nobody, and the config's admins are exempt. Capacity asks refusal() at every admission (the
// API's start and the controller's, so a hand-written manifest over its owner's quota waits like
// one over the fleet's); the API asks claimServer() before a create writes anything.
//
// Cheap at scale: who owns which server is kept in a book updated from the index's events (one
// lookup per change), so a create counts the person's servers without a scan, and a start walks
// only the editors that run or are starting, which capacity walks anyway.
import type { Config } from '../config/settings.ts';
import type { PersonUse, QuotaGate, QuotaLimit, QuotaRefusal, QuotaUser } from '../index/quota-gate.ts';
import type { ServerIndex } from '../index/server-index.ts';
import { displayNameOf, type EditorServer } from '../manifests/types.ts';

export type { PersonUse, QuotaRefusal };

/** Servers a refusal names in its message and details; the rest are counted. */
export const MAX_LISTED = 20;
/** People GET /health lists (those using the most first); the rest are counted. */
export const MAX_PEOPLE = 100;
/** A create's claim that never reached the index (a lost create) is dropped after this long. */
const CLAIM_MS = 120_000;

export interface PersonQuotasDeps {
  /** The config's capacity.perPerson in use now. */
  limits: () => Config['capacity']['perPerson'];
  /** True for the config's admins (exempt), read at every decision. */
  isAdmin: (person: string) => boolean;
  /** The owner recorded in a server's manifest (src/api/access.ts's rule, passed in). */
  ownerOf: (server: EditorServer | undefined) => string | undefined;
  index: Pick<ServerIndex, 'records' | 'serverNamed' | 'on'>;
  now?: () => number;
}

/** A create under way: its person, until when it counts, and the name once its manifest exists. */
interface Claim {
  person: string;
  until: number;
  name?: string;
}

export class PersonQuotas implements QuotaGate {
  readonly #deps: PersonQuotasDeps;
  readonly #now: () => number;
  /** The owner of each server that has one, by manifest name. */
  readonly #owners = new Map<string, string>();
  /** Each person's servers, by manifest name. */
  readonly #byPerson = new Map<string, Set<string>>();
  readonly #claims = new Set<Claim>();
  readonly #disposers: Array<() => void> = [];

  constructor(deps: PersonQuotasDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    for (const name of deps.index.records.keys()) this.#note(name);
    // A manifest read or its owner edited ('changed'), a reconcile that read a hand edit and
    // wrote nothing ('reconciled'), a server gone ('deleted'): each looks at that one name.
    this.#disposers.push(deps.index.on('changed', (name) => this.#note(name)));
    this.#disposers.push(deps.index.on('reconciled', ({ name }) => this.#note(name)));
    this.#disposers.push(deps.index.on('deleted', (name) => this.#note(name)));
  }

  /** The person a server counts for: its owner, unless no one owns it. */
  personOf(name: string): string | undefined {
    return this.#owners.get(name) ?? this.#deps.ownerOf(this.#deps.index.serverNamed(name));
  }

  /**
   * Why one more editor for `name` would pass its owner's limit on running editors or memory;
   * undefined when it would not (or no limit applies). `occupants` are the editors that run or
   * hold a slot, `name` left out; `memoryOf` is capacity's measure of each, `need` of a new one.
   */
  refusal(name: string, occupants: Iterable<string>, memoryOf: (name: string) => number, need: number): QuotaRefusal | undefined {
    const limits = this.#deps.limits();
    if (limits.runningEditors === 0 && limits.memoryMb === 0) return undefined;
    const person = this.personOf(name);
    if (person === undefined || this.#deps.isAdmin(person)) return undefined;
    const mine: string[] = [];
    for (const other of occupants) if (other !== name && this.personOf(other) === person) mine.push(other);
    mine.sort();
    if (limits.runningEditors > 0 && mine.length + 1 > limits.runningEditors) {
      return this.#refusal('capacity.perPerson.runningEditors', person, limits.runningEditors, mine.length, mine,
        (list) => `${person} runs ${mine.length} of ${limits.runningEditors} editors allowed per person (capacity.perPerson.runningEditors): ${list}; stop one first`);
    }
    if (limits.memoryMb > 0) {
      const used = Math.round(mine.reduce((total, n) => total + memoryOf(n), 0));
      if (used + need > limits.memoryMb) {
        return this.#refusal('capacity.perPerson.memoryMb', person, limits.memoryMb, used, mine, (list) => mine.length === 0
          ? `${person} may use ${limits.memoryMb} MB per person (capacity.perPerson.memoryMb) and one editor needs about ${Math.round(need)} MB: raise capacity.perPerson.memoryMb in the config`
          : `${person}'s editors use ${used} MB of ${limits.memoryMb} MB allowed per person (capacity.perPerson.memoryMb) and one more needs about ${Math.round(need)} MB: ${list}; stop one first`);
      }
    }
    return undefined;
  }

  claimServer(person: string | undefined): { refused: QuotaRefusal } | { bind(name: string): void; release(): void } {
    const limit = this.#deps.limits().servers;
    if (person === undefined || limit === 0 || this.#deps.isAdmin(person)) return { bind: () => undefined, release: () => undefined };
    const now = this.#now();
    for (const claim of this.#claims) if (claim.until <= now) this.#claims.delete(claim);
    const names = [...(this.#byPerson.get(person) ?? [])].sort();
    const creating = [...this.#claims].filter((c) => c.person === person).length;
    const used = names.length + creating;
    if (used + 1 > limit) {
      return {
        refused: this.#refusal('capacity.perPerson.servers', person, limit, used, names,
          (list) => `${person} has ${used} of ${limit} servers allowed per person (capacity.perPerson.servers): ${list}${creating > 0 ? ` (and ${creating} being created)` : ''}; delete one first`),
      };
    }
    const claim: Claim = { person, until: now + CLAIM_MS };
    this.#claims.add(claim);
    return {
      // Until the index has read the new manifest, the claim counts it.
      bind: (name) => {
        claim.name = name;
        if (this.#owners.has(name)) this.#claims.delete(claim);
      },
      release: () => void this.#claims.delete(claim),
    };
  }

  /**
   * What each person with a server uses, those using the most first (at most MAX_PEOPLE), and
   * how many people have servers. `occupants` and `memoryOf` as for refusal().
   */
  use(occupants: Iterable<string>, memoryOf: (name: string) => number): { people: PersonUse[]; total: number } {
    const running = new Map<string, { count: number; mb: number }>();
    for (const name of occupants) {
      const person = this.personOf(name);
      if (person === undefined) continue;
      const figures = running.get(person) ?? { count: 0, mb: 0 };
      figures.count++;
      figures.mb += memoryOf(name);
      running.set(person, figures);
    }
    const people = [...this.#byPerson].map(([person, names]): PersonUse => ({
      person,
      running: running.get(person)?.count ?? 0,
      servers: names.size,
      memory_mb: Math.round(running.get(person)?.mb ?? 0),
      exempt: this.#deps.isAdmin(person),
    }));
    people.sort((a, b) => b.running - a.running || b.memory_mb - a.memory_mb || b.servers - a.servers || (a.person < b.person ? -1 : 1));
    return { people: people.slice(0, MAX_PEOPLE), total: people.length };
  }

  dispose(): void {
    for (const dispose of this.#disposers.splice(0)) dispose();
  }

  /** Takes the server's owner from its record as the index has it now (none once it is gone). */
  #note(name: string): void {
    const person = this.#deps.ownerOf(this.#deps.index.serverNamed(name));
    const before = this.#owners.get(name);
    if (person !== undefined) {
      for (const claim of this.#claims) if (claim.name === name) this.#claims.delete(claim);
    }
    if (before === person) return;
    if (before !== undefined) {
      const names = this.#byPerson.get(before);
      names?.delete(name);
      if (names?.size === 0) this.#byPerson.delete(before);
    }
    if (person === undefined) {
      this.#owners.delete(name);
      return;
    }
    this.#owners.set(name, person);
    const names = this.#byPerson.get(person) ?? new Set<string>();
    names.add(name);
    this.#byPerson.set(person, names);
  }

  #refusal(limit: QuotaLimit, person: string, allowed: number, used: number, names: string[], message: (list: string) => string): QuotaRefusal {
    const servers = names.slice(0, MAX_LISTED).map((name): QuotaUser => {
      const server = this.#deps.index.serverNamed(name);
      return { id: server?.metadata.uid, manifest: name, name: server ? displayNameOf(server) : name };
    });
    const more = names.length - servers.length;
    const list = servers.map((s) => s.manifest).join(', ') + (more > 0 ? ` and ${more} more` : '');
    return { limit, person, allowed, used, servers, total: names.length, message: message(list) };
  }
}
