// The accounting of the quotas per person on its own: the owner book kept from the index's
// events (a new server, an owner edited by hand, a server gone), the running and memory limits as
// Capacity asks them (slots held for starts count), creates held until the index has them, admins
// exempt, and the figures per person; with the index, the running set and the clock in memory.
import { describe, expect, it } from 'vitest';
import { ownerOf } from '../../src/api/access.ts';
import { Capacity } from '../../src/controller/capacity.ts';
import { PersonQuotas } from '../../src/controller/person-quotas.ts';
import { DEFAULT_CONFIG, type Config } from '../../src/config/settings.ts';
import type { EditorServer } from '../../src/manifests/types.ts';
import { fakeIndex, reconciled } from '../helpers/fake-index.ts';

type Limits = Config['capacity']['perPerson'];

function people(given: Partial<Limits>) {
  const limits: Limits = { runningEditors: 0, servers: 0, memoryMb: 0, ...given };
  const index = fakeIndex();
  const admins = new Set(['root@example.com']);
  let now = 1_000_000;
  const serverNamed = (name: string) => index.records.get(name)?.server;
  const quotas = new PersonQuotas({ limits: () => limits, isAdmin: (p) => admins.has(p), ownerOf, index: { ...index, records: index.records, serverNamed, on: index.on.bind(index) }, now: () => now });
  const running = new Set<string>();
  const memory = new Map<string, number>();
  const capacity = new Capacity({
    config: () => ({ ...DEFAULT_CONFIG.capacity, maxMemoryMb: 0, perPerson: limits }),
    running: () => running, memoryOf: (n) => memory.get(n), lastUsed: () => undefined, enqueue: () => undefined, quotas,
  });
  /** A server the controller has read: its record set and the news told. */
  const add = (name: string, owner?: string) => {
    const server: EditorServer = {
      apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer',
      metadata: { name, uid: `uid-${name}`, ...(owner ? { annotations: { 'devbox.dev/owner': owner } } : {}) },
      spec: { displayName: name.toUpperCase(), running: false, extensions: [] },
    };
    index.records.set(name, { name, server });
    index.emit('changed', name);
  };
  const remove = (name: string) => {
    index.records.delete(name);
    index.emit('deleted', name);
  };
  return { quotas, capacity, index, add, remove, running, memory, limits, admins, advance: (ms: number) => (now += ms) };
}

describe('PersonQuotas', () => {
  it('counts a person\'s running editors and held starts, refuses one more, and lets other people and unowned servers be', () => {
    const { capacity, add, running } = people({ runningEditors: 2 });
    for (const name of ['a1', 'a2', 'a3']) add(name, 'Alice@Example.com');
    add('b1', 'bob@example.com');
    add('nobodys');
    running.add('a1');
    // a2's start holds its slot: it counts before its editor runs.
    expect(capacity.admit('a2')).toEqual({ kind: 'admitted' });
    const refused = capacity.admit('a3');
    expect(refused).toMatchObject({ kind: 'refused', limit: 'capacity.perPerson.runningEditors' });
    expect(refused.kind === 'refused' && refused.message).toBe('alice@example.com runs 2 of 2 editors allowed per person (capacity.perPerson.runningEditors): a1, a2; stop one first');
    expect(refused.kind === 'refused' && refused.quota).toMatchObject({
      person: 'alice@example.com', allowed: 2, used: 2, total: 2,
      servers: [{ id: 'uid-a1', manifest: 'a1', name: 'A1' }, { id: 'uid-a2', manifest: 'a2', name: 'A2' }],
    });
    expect(capacity.admit('b1')).toEqual({ kind: 'admitted' });
    expect(capacity.admit('nobodys')).toEqual({ kind: 'admitted' });
    // The held start given up: room again.
    capacity.release('a2');
    expect(capacity.admit('a3')).toEqual({ kind: 'admitted' });
  });

  it('follows an owner edited by hand, and forgets a server that is gone', () => {
    const { capacity, quotas, index, add, remove, running } = people({ runningEditors: 1 });
    add('x', 'alice@example.com');
    add('y', 'alice@example.com');
    running.add('x');
    expect(capacity.admit('y').kind).toBe('refused');
    // x given to Bob by a hand edit that changed no status: the reconcile's end tells it.
    index.records.get('x')!.server!.metadata.annotations = { 'devbox.dev/owner': 'bob@example.com' };
    index.emit('reconciled', reconciled('x'));
    expect(quotas.personOf('x')).toBe('bob@example.com');
    expect(capacity.admit('y')).toEqual({ kind: 'admitted' });
    capacity.release('y');
    running.delete('x');
    remove('x');
    expect(quotas.use([], () => 0)).toEqual({ total: 1, people: [{ person: 'alice@example.com', running: 0, servers: 1, memory_mb: 0, exempt: false }] });
  });

  it('adds the person\'s measured memory, counts an unsampled editor at the estimate, and names the limit', () => {
    const { capacity, add, running, memory } = people({ memoryMb: 1000 });
    for (const name of ['a', 'b', 'c', 'd']) add(name, 'alice@example.com');
    add('z', 'bob@example.com');
    running.add('a').add('b').add('z');
    memory.set('a', 300).set('b', 400).set('z', 5000);
    // Bob's 5 GB is not Alice's: 700 MB is hers; one more is counted at the mean of the fleet's editors (1900 MB).
    const refused = capacity.admit('c');
    expect(refused.kind === 'refused' && refused.message).toBe('alice@example.com\'s editors use 700 MB of 1000 MB allowed per person (capacity.perPerson.memoryMb) and one more needs about 1900 MB: a, b; stop one first');
    memory.set('z', 100);
    // Now one more is counted at the mean, 267 MB: 700 + 267 fits.
    expect(capacity.admit('c')).toEqual({ kind: 'admitted' });
    // c, admitted and not sampled, counts at the estimate for d.
    const next = capacity.admit('d');
    expect(next).toMatchObject({ kind: 'refused', limit: 'capacity.perPerson.memoryMb' });
    expect(next.kind === 'refused' && next.quota?.used).toBe(967);
  });

  it('holds a create\'s room until the index has its server, and gives it back when the create fails', () => {
    const { quotas, add, advance } = people({ servers: 2 });
    add('one', 'alice@example.com');
    const claim = quotas.claimServer('alice@example.com');
    expect('refused' in claim).toBe(false);
    const second = quotas.claimServer('alice@example.com');
    expect('refused' in second && second.refused.message).toBe('alice@example.com has 2 of 2 servers allowed per person (capacity.perPerson.servers): one (and 1 being created); delete one first');
    // The manifest is written (bound) and read by the controller: counted once, as the index has it.
    if (!('refused' in claim)) claim.bind('two');
    add('two', 'alice@example.com');
    const third = quotas.claimServer('alice@example.com');
    expect('refused' in third && third.refused).toMatchObject({ used: 2, total: 2 });
    // A failed create gives its room back; a lost one is dropped after two minutes.
    const bob = quotas.claimServer('bob@example.com');
    expect('refused' in bob).toBe(false);
    if (!('refused' in bob)) bob.release();
    for (const name of ['never-read-1', 'never-read-2']) {
      const lost = quotas.claimServer('carol@example.com');
      if (!('refused' in lost)) lost.bind(name);
    }
    expect('refused' in quotas.claimServer('carol@example.com')).toBe(true);
    advance(120_001);
    expect('refused' in quotas.claimServer('carol@example.com')).toBe(false);
  });

  it('exempts admins and servers without an owner, and lifts every limit at 0', () => {
    const { capacity, quotas, add, running, limits } = people({ runningEditors: 1, servers: 1, memoryMb: 1 });
    add('r1', 'root@example.com');
    add('r2', 'ROOT@example.com');
    running.add('r1');
    expect(capacity.admit('r2')).toEqual({ kind: 'admitted' });
    expect('refused' in quotas.claimServer('root@example.com')).toBe(false);
    expect('refused' in quotas.claimServer(undefined)).toBe(false);
    add('a', 'alice@example.com');
    add('b', 'alice@example.com');
    running.add('a');
    expect(capacity.admit('b').kind).toBe('refused');
    Object.assign(limits, { runningEditors: 0, servers: 0, memoryMb: 0 });
    expect(capacity.admit('b')).toEqual({ kind: 'admitted' });
    expect('refused' in quotas.claimServer('alice@example.com')).toBe(false);
  });

  it('lists people with servers, those running the most first, with the limits in GET /health', () => {
    const { capacity, add, running, memory } = people({ runningEditors: 3 });
    add('a', 'alice@example.com');
    add('b1', 'bob@example.com');
    add('b2', 'bob@example.com');
    add('r', 'root@example.com');
    running.add('b1').add('b2').add('r');
    memory.set('b1', 100).set('b2', 150).set('r', 50);
    expect(capacity.read().per_person).toEqual({
      limits: { running_editors: 3, servers: null, memory_mb: null },
      people: [
        { person: 'bob@example.com', running: 2, servers: 2, memory_mb: 250, exempt: false },
        { person: 'root@example.com', running: 1, servers: 1, memory_mb: 50, exempt: true },
        { person: 'alice@example.com', running: 0, servers: 1, memory_mb: 0, exempt: false },
      ],
      people_total: 3,
    });
  });
});
