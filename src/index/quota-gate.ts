// What the API may ask of the per-person quotas (capacity.perPerson): whether a person may create
// one more server; and what each person uses now, as GET /health and /metrics show it. Implemented
// by the controller's PersonQuotas and Capacity (src/controller/person-quotas.ts), defined here so readers of the
// index need not import the controller.

/** A per-person limit, by its place in the config. */
export type QuotaLimit = 'capacity.perPerson.runningEditors' | 'capacity.perPerson.servers' | 'capacity.perPerson.memoryMb';

/** One of a person's servers that uses the limit, as the refusal lists it. */
export interface QuotaUser {
  /** The server's uid (the API's id). */
  id: string | undefined;
  /** The manifest name. */
  manifest: string;
  /** The display name. */
  name: string;
}

/** A refusal by a per-person limit: the figures its message is made of, for the API's details. */
export interface QuotaRefusal {
  limit: QuotaLimit;
  person: string;
  /** The limit's value (MB for memoryMb). */
  allowed: number;
  /** What the person uses now (MB for memoryMb), the refused server left out. */
  used: number;
  /** The person's servers that use it, by manifest name (at most MAX_LISTED). */
  servers: QuotaUser[];
  /** How many servers use it in all (the list may be cut). */
  total: number;
  message: string;
}

/** One person's use, for GET /health and /metrics. */
export interface PersonUse {
  person: string;
  /** Editors running or starting. */
  running: number;
  /** Servers declared. */
  servers: number;
  /** Resident memory of their running editors at the last sample (an unsampled one at the estimate). */
  memory_mb: number;
  /** An admin: no limit applies. */
  exempt: boolean;
}

/** The per-person quotas a create passes before anything is written. */
export interface QuotaGate {
  /**
   * Holds room for one more of the person's servers, or answers the refusal (nothing held).
   * `bind` tells the name the server got (it then counts as the person's at once); `release`
   * gives the room back when the create failed. Undefined person (no one signed in): admitted.
   */
  claimServer(person: string | undefined): { refused: QuotaRefusal } | { bind(name: string): void; release(): void };
}
