// Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it, so
// that two replicas of the controller never manage the same editors: one holds the Lease and
// serves, the other waits. Every write is guarded by the Lease's resourceVersion, and expiry is
// judged by this process's own clock from when it last saw the record change (never by comparing
// another machine's renewTime with ours), so clock skew between nodes cannot hand out two leases.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Clock } from '../../core/clock.ts';
import { messageOf, statusOf } from './client.ts';

/** The Lease's spec as the election reads and writes it. */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  /** RFC 3339 times, as the API server keeps them (microseconds). */
  acquireTime: string;
  renewTime: string;
  leaseTransitions: number;
}

export interface StoredLease {
  resourceVersion: string;
  record: LeaseRecord;
}

/** The Lease on the API server; conflicts are answers (undefined), not errors. */
export interface LeaseStore {
  get(): Promise<StoredLease | undefined>;
  /** Undefined when the Lease exists already (someone created it first). */
  create(record: LeaseRecord): Promise<StoredLease | undefined>;
  /** Undefined when the Lease changed since `resourceVersion` (409). */
  replace(resourceVersion: string, record: LeaseRecord): Promise<StoredLease | undefined>;
}

export interface LeaderElectionOptions {
  store: LeaseStore;
  identity: string;
  clock: Clock;
  log?: (message: string) => void;
  /** How long a Lease lasts without a renewal before another may take it. */
  leaseMs?: number;
  /** A leader that has not renewed for this long gives up (shorter than leaseMs, so it stops before another may start). */
  renewDeadlineMs?: number;
  /** Between two attempts to acquire or renew. */
  retryMs?: number;
}

/** The plan's timings: lease 15 s, renew deadline 10 s, retry every 2 s. */
export const LEASE_MS = 15_000;
export const RENEW_DEADLINE_MS = 10_000;
export const RETRY_MS = 2_000;

/**
 * One contender for the Lease. `acquire` resolves once this process leads; from then on it renews
 * until `lost` resolves (with why) or `release` gives the Lease up. Disposable: `release` (or an
 * aborted `acquire`) leaves no timer behind.
 */
export class LeaderElector {
  readonly identity: string;
  /** Resolves, with the reason, when a leader could not renew within the deadline or saw another holder. */
  readonly lost: Promise<string>;
  readonly #store: LeaseStore;
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  readonly #leaseMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryMs: number;
  #markLost!: (reason: string) => void;
  /** The record last read and when (by our clock) it last changed. */
  #observed: StoredLease | undefined;
  #observedAt = 0;
  #lastRenew = 0;
  #leading = false;
  #stopped = false;
  #timer: unknown;
  /** Fires at the renew deadline unless a renewal came first. */
  #watchdog: unknown;
  #lastError = '';

  constructor(options: LeaderElectionOptions) {
    this.identity = options.identity;
    this.#store = options.store;
    this.#clock = options.clock;
    this.#log = options.log ?? (() => undefined);
    this.#leaseMs = options.leaseMs ?? LEASE_MS;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? RENEW_DEADLINE_MS;
    this.#retryMs = options.retryMs ?? RETRY_MS;
    this.lost = new Promise((resolve) => (this.#markLost = resolve));
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** The identity that holds the Lease as last seen (empty when none, or not read yet). */
  get holder(): string {
    return this.#observed?.record.holderIdentity ?? '';
  }

  /** Tries now and every retry period until this process holds the Lease (true) or the signal aborts (false). */
  acquire(signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      let announced = '';
      let reported = '';
      const attempt = async () => {
        if (signal.aborted || this.#stopped) return resolve(false);
        const got = await this.#attempt();
        if (signal.aborted || this.#stopped) return resolve(false);
        if (got) {
          signal.removeEventListener('abort', abort);
          this.#leading = true;
          this.#log(`leader election: ${this.identity} leads (Lease held since ${this.#observed!.record.acquireTime})`);
          this.#armWatchdog();
          this.#scheduleRenew();
          return resolve(true);
        }
        if (this.#lastError && this.#lastError !== reported) {
          reported = this.#lastError;
          this.#log(`leader election: ${this.identity} could not read or take the Lease: ${this.#lastError}`);
        }
        if (this.holder && this.holder !== announced) {
          announced = this.holder;
          this.#log(`leader election: ${this.holder} leads; ${this.identity} waits as a standby`);
        }
        this.#timer = this.#clock.setTimeout(() => void attempt(), this.#retryMs);
      };
      const abort = () => {
        this.#clock.clearTimeout(this.#timer);
        resolve(false);
      };
      signal.addEventListener('abort', abort, { once: true });
      void attempt();
    });
  }

  /**
   * Stops renewing and, while still the holder, hands the Lease back (no holder, 1 s long), so a
   * standby takes over at its next attempt instead of after the whole lease. Never throws.
   */
  async release(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    this.#clock.clearTimeout(this.#watchdog);
    if (!this.#leading || !this.#observed) return;
    this.#leading = false;
    const { resourceVersion, record } = this.#observed;
    try {
      await this.#store.replace(resourceVersion, { ...record, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(this.#clock.now()) });
    } catch {
      // It expires by itself.
    }
  }

  #scheduleRenew(): void {
    this.#timer = this.#clock.setTimeout(() => void this.#renew(), this.#retryMs);
  }

  async #renew(): Promise<void> {
    if (this.#stopped) return;
    const renewed = await this.#attempt();
    if (this.#stopped) return;
    if (renewed) this.#armWatchdog();
    const holder = this.holder;
    if (!renewed && holder && holder !== this.identity) return this.#lose(`${holder} holds the Lease now`);
    this.#scheduleRenew();
  }

  /** A leader gives up at its renew deadline, even while a call to the API server hangs. */
  #armWatchdog(): void {
    this.#clock.clearTimeout(this.#watchdog);
    this.#watchdog = this.#clock.setTimeout(() => {
      const since = Math.round((this.#clock.now() - this.#lastRenew) / 1000);
      this.#lose(`could not renew the Lease for ${since} s${this.#lastError ? ` (${this.#lastError})` : ''}`);
    }, this.#renewDeadlineMs);
  }

  #lose(reason: string): void {
    if (this.#stopped) return;
    this.#leading = false;
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    this.#clock.clearTimeout(this.#watchdog);
    this.#log(`leader election: ${this.identity} lost the lead: ${reason}`);
    this.#markLost(reason);
  }

  /** One try, given up (false) when the API server does not answer within the renew deadline. */
  #attempt(): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = this.#clock.setTimeout(() => {
        this.#lastError = 'the API server did not answer';
        resolve(false);
      }, this.#renewDeadlineMs);
      void this.#tryAcquireOrRenew().then((held) => {
        this.#clock.clearTimeout(timer);
        resolve(held);
      });
    });
  }

  /** One read and at most one guarded write: true when this process holds the Lease afterwards. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = this.#clock.now();
    try {
      const current = await this.#store.get();
      if (!current) {
        const created = await this.#store.create(this.#recordFor(undefined, now));
        if (!created) return false;
        return this.#held(created, now);
      }
      this.#observe(current, now);
      const { record } = current;
      const heldByOther = record.holderIdentity !== '' && record.holderIdentity !== this.identity;
      // Expiry by our own clock, from when we saw the record last change.
      if (heldByOther && this.#observedAt + record.leaseDurationSeconds * 1000 > now) return false;
      const replaced = await this.#store.replace(current.resourceVersion, this.#recordFor(record, now));
      if (!replaced) return false;
      return this.#held(replaced, now);
    } catch (error) {
      this.#lastError = messageOf(error);
      return false;
    }
  }

  #held(lease: StoredLease, now: number): boolean {
    this.#observe(lease, now);
    this.#lastRenew = now;
    this.#lastError = '';
    return true;
  }

  #observe(lease: StoredLease, now: number): void {
    const before = this.#observed?.record;
    const changed = !before || before.holderIdentity !== lease.record.holderIdentity || before.renewTime !== lease.record.renewTime;
    if (changed) this.#observedAt = now;
    this.#observed = lease;
  }

  /** The record that makes (or keeps) this process the holder. */
  #recordFor(previous: LeaseRecord | undefined, now: number): LeaseRecord {
    const time = microTime(now);
    const ours = previous?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.#leaseMs / 1000),
      acquireTime: ours ? previous!.acquireTime : time,
      renewTime: time,
      leaseTransitions: (previous?.leaseTransitions ?? 0) + (previous && !ours ? 1 : 0),
    };
  }
}

/** An RFC 3339 time with microseconds, as Lease times are (the API server refuses fewer digits). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

/** The holder's name: the Pod's (POD_NAME, from the downward API), else this host's with a random suffix. */
export function leaderIdentity(env: NodeJS.ProcessEnv = process.env): string {
  return env.POD_NAME?.trim() || `${hostname()}-${randomBytes(3).toString('hex')}`;
}

/** The name of the Lease the controller's replicas contend for. */
export const LEASE_NAME = 'devbox-controller';

/** The Lease `name` in `namespace` on the API server of `config`. */
export function kubeLeaseStore(config: KubeConfig, namespace: string, name: string = LEASE_NAME): LeaseStore {
  const api = config.makeApiClient(CoordinationV1Api);
  const stored = (lease: V1Lease): StoredLease => ({
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    record: {
      holderIdentity: lease.spec?.holderIdentity ?? '',
      leaseDurationSeconds: lease.spec?.leaseDurationSeconds ?? 0,
      acquireTime: timeText(lease.spec?.acquireTime),
      renewTime: timeText(lease.spec?.renewTime),
      leaseTransitions: lease.spec?.leaseTransitions ?? 0,
    },
  });
  const body = (record: LeaseRecord, resourceVersion?: string): V1Lease => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      holderIdentity: record.holderIdentity,
      leaseDurationSeconds: record.leaseDurationSeconds,
      acquireTime: new V1MicroTime(record.acquireTime),
      renewTime: new V1MicroTime(record.renewTime),
      leaseTransitions: record.leaseTransitions,
    },
  });
  const unlessStatus = async <T>(status: number, call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      if (statusOf(error) === status) return undefined;
      throw error;
    }
  };
  return {
    get: async () => {
      const lease = await unlessStatus(404, () => api.readNamespacedLease({ name, namespace }));
      return lease && stored(lease);
    },
    create: async (record) => {
      const lease = await unlessStatus(409, () => api.createNamespacedLease({ namespace, body: body(record) }));
      return lease && stored(lease);
    },
    replace: async (resourceVersion, record) => {
      const lease = await unlessStatus(409, () => api.replaceNamespacedLease({ name, namespace, body: body(record, resourceVersion) }));
      return lease && stored(lease);
    },
  };
}

/** A Lease time as the API server sent it (client-node may hand it over as a Date or a string). */
function timeText(value: unknown): string {
  if (value instanceof Date) return microTime(value.getTime());
  return typeof value === 'string' ? value : '';
}
