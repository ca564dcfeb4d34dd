// Leader election over a Lease, against an in-memory Lease store that checks resourceVersions as
// the API server does and can fail or hang like one that went away; time moves by a fake clock.
import { describe, expect, it } from 'vitest';
import { LeaderElector, microTime, type LeaseRecord, type LeaseStore, type StoredLease } from '../../../src/runtime/kubernetes/leader.ts';
import { FakeClock } from '../../helpers/fakes.ts';

/** One Lease with a resourceVersion that every write bumps; a write on an older version is refused (409). */
class FakeLeases {
  lease: StoredLease | undefined;
  version = 0;
  writes: LeaseRecord[] = [];

  /** The store one contender sees: `cut()` makes its calls fail (or hang) as with a dead connection. */
  storeFor(): LeaseStore & { cut(how: 'fail' | 'hang'): void } {
    let broken: 'fail' | 'hang' | undefined;
    const call = async <T>(fn: () => T): Promise<T> => {
      if (broken === 'fail') throw new Error('connect ECONNREFUSED');
      if (broken === 'hang') return new Promise<T>(() => undefined);
      return fn();
    };
    return {
      cut: (how) => (broken = how),
      get: () => call(() => this.lease && structuredClone(this.lease)),
      create: (record) => call(() => (this.lease ? undefined : this.#write(record))),
      replace: (resourceVersion, record) => call(() => (this.lease?.resourceVersion === resourceVersion ? this.#write(record) : undefined)),
    };
  }

  #write(record: LeaseRecord): StoredLease {
    this.writes.push(record);
    this.lease = { resourceVersion: String(++this.version), record: structuredClone(record) };
    return structuredClone(this.lease);
  }
}

/** Lets the stores' promises and the electors' continuations run. */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** Moves the clock in small steps, letting async work run between them. */
async function pass(clock: FakeClock, ms: number, stepMs = 100): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    clock.advance(Math.min(stepMs, ms - done));
    await settle();
  }
}

function contender(leases: FakeLeases, clock: FakeClock, identity: string, log: string[] = []) {
  const store = leases.storeFor();
  const elector = new LeaderElector({ store, identity, clock, log: (m) => log.push(m) });
  let lostWith: string | undefined;
  void elector.lost.then((reason) => (lostWith = reason));
  const stop = new AbortController();
  let leads: boolean | undefined;
  void elector.acquire(stop.signal).then((got) => (leads = got));
  return { elector, store, stop, leads: () => leads, lostWith: () => lostWith };
}

describe('leader election', () => {
  it('gives the Lease to the first contender and keeps the second waiting as a standby', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const log: string[] = [];
    const a = contender(leases, clock, 'a');
    await settle();
    const b = contender(leases, clock, 'b', log);
    await pass(clock, 30_000);
    expect(a.leads()).toBe(true);
    expect(b.leads()).toBeUndefined();
    expect(leases.lease?.record.holderIdentity).toBe('a');
    expect(b.elector.holder).toBe('a');
    expect(log).toContain('leader election: a leads; b waits as a standby');
    a.elector.release();
    b.stop.abort();
    await settle();
    expect(b.leads()).toBe(false);
  });

  it('renews every retry period, keeping acquireTime and moving renewTime', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = contender(leases, clock, 'a');
    await settle();
    const first = leases.lease!.record;
    await pass(clock, 6_000);
    expect(leases.writes.length).toBe(4); // the create, then a renewal at 2, 4 and 6 s
    expect(leases.lease!.record.acquireTime).toBe(first.acquireTime);
    expect(leases.lease!.record.renewTime).toBe(microTime(6_000));
    expect(leases.lease!.record).toMatchObject({ leaseDurationSeconds: 15, leaseTransitions: 0 });
    await a.elector.release();
  });

  it('lets the standby take over once the dead leader\'s lease has run out by the standby\'s own clock, not before', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = contender(leases, clock, 'a');
    await settle();
    const b = contender(leases, clock, 'b');
    await pass(clock, 4_000);
    // The leader dies: it writes nothing more (its last renewal was at 4 s).
    a.store.cut('hang');
    const diedAt = clock.now();
    await pass(clock, 14_000);
    expect(b.leads()).toBeUndefined();
    await pass(clock, 4_000);
    expect(b.leads()).toBe(true);
    expect(leases.lease!.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    // Taken at the first attempt after 15 s without a change: within the lease and one retry period.
    const takenAt = Date.parse(leases.lease!.record.acquireTime);
    expect(takenAt - diedAt).toBeGreaterThanOrEqual(15_000 - 2_000);
    expect(takenAt - diedAt).toBeLessThanOrEqual(15_000 + 2_000);
    await b.elector.release();
  });

  it('makes a leader that cannot renew give up at the renew deadline, before anyone else may lead', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = contender(leases, clock, 'a');
    await settle();
    await pass(clock, 2_000); // renewed at 2 s, the last time
    a.store.cut('fail');
    await pass(clock, 9_000);
    expect(a.lostWith()).toBeUndefined();
    expect(a.elector.leading).toBe(true);
    await pass(clock, 1_500);
    expect(a.lostWith()).toMatch(/^could not renew the Lease for 10 s \(connect ECONNREFUSED\)$/);
    expect(a.elector.leading).toBe(false);
    expect(clock.pendingDelays).toEqual([]); // no timer left behind
  });

  it('gives up at the deadline even while a call to the API server hangs', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = contender(leases, clock, 'a');
    await settle();
    await pass(clock, 2_000);
    a.store.cut('hang');
    await pass(clock, 10_500);
    expect(a.lostWith()).toMatch(/^could not renew the Lease for 10 s/);
  });

  it('loses the lead at once when another holder took the Lease', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = contender(leases, clock, 'a');
    await settle();
    // Someone (a replica that judged the lease expired) writes itself in.
    leases.lease = { resourceVersion: String(++leases.version), record: { ...leases.lease!.record, holderIdentity: 'x' } };
    await pass(clock, 2_100);
    expect(a.lostWith()).toBe('x holds the Lease now');
  });

  it('writes only on the resourceVersion it read: of two contenders racing for a free Lease, one wins', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    leases.lease = { resourceVersion: '7', record: { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: microTime(0), renewTime: microTime(0), leaseTransitions: 3 } };
    leases.version = 7;
    const a = contender(leases, clock, 'a');
    const b = contender(leases, clock, 'b');
    await pass(clock, 5_000);
    expect([a.leads(), b.leads()].filter(Boolean)).toEqual([true]);
    expect(leases.lease!.record.leaseTransitions).toBe(4);
    await a.elector.release();
    await b.elector.release();
  });

  it('hands the Lease back on release, so the standby takes over at its next attempt', async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = contender(leases, clock, 'a');
    await settle();
    const b = contender(leases, clock, 'b');
    await pass(clock, 3_000);
    await a.elector.release();
    expect(leases.lease!.record).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    await pass(clock, 2_000);
    expect(b.leads()).toBe(true);
    expect(a.lostWith()).toBeUndefined(); // a release is no loss
    await b.elector.release();
  });

  it('writes Lease times with microseconds, as the API server requires', () => {
    expect(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678))).toBe('2026-01-02T03:04:05.678000Z');
  });
});
