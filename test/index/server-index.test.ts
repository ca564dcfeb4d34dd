// The index the controller feeds: its events come as typed payloads (a reconcile's figures in one
// object, not positional arguments), a listener's removal is what on() returns, and what it
// answers is the controller's word at the moment it is asked.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LiveServerIndex, type IndexSource } from '../../src/index/live-index.ts';
import type { ServerRecord } from '../../src/index/records.ts';
import type { Reconciled } from '../../src/index/server-index.ts';
import { TypedEvents } from '../../src/index/typed-events.ts';

function controllerStandIn() {
  const alive = new Set<string>(['alpha']);
  const source = Object.assign(new EventEmitter(), {
    records: new Map<string, ServerRecord>([['alpha', { name: 'alpha' }], ['beta', { name: 'beta' }]]),
    events: { list: (name: string) => [{ time: 't', type: 'Normal' as const, reason: 'Started', message: name }] },
    nameOfUid: (uid: string) => (uid === 'u-1' ? 'alpha' : undefined),
    endpointOf: (name: string) => (alive.has(name) ? { host: '127.0.0.1', port: 8010 } : undefined),
    routeTo: (port: number) => (port === 8010 ? { host: '127.0.0.1', port } : undefined),
    wakeState: () => undefined,
    refs: () => new Map([...alive].map((name) => [name, { kind: 'process', pid: 4242, startTicks: 7 }])),
    isEditorRunning: (name: string) => alive.has(name),
  }) satisfies IndexSource;
  return { source, alive, index: new LiveServerIndex(source) };
}

describe('the server index', () => {
  it('tells a reconcile as one typed payload, and changes and deletions by name', () => {
    const { source, index } = controllerStandIn();
    const seen: Array<Reconciled | string> = [];
    index.on('reconciled', (done) => seen.push(done));
    index.on('changed', (name) => seen.push(`changed ${name}`));
    index.on('deleted', (name) => seen.push(`deleted ${name}`));
    const failure = new Error('no room');
    source.emit('reconciled', 'alpha', 3, false, 0.25, failure);
    source.emit('changed', 'beta');
    source.emit('deleted', 'beta');
    expect(seen).toEqual([{ name: 'alpha', run: 3, waiting: false, seconds: 0.25, error: failure }, 'changed beta', 'deleted beta']);
  });

  it('stops calling a listener once the removal on() returned is called', () => {
    const { source, index } = controllerStandIn();
    const names: string[] = [];
    const off = index.on('changed', (name) => names.push(name));
    source.emit('changed', 'alpha');
    off();
    source.emit('changed', 'beta');
    expect(names).toEqual(['alpha']);
  });

  it("answers with the controller's word at the moment it is asked", () => {
    const { alive, index } = controllerStandIn();
    expect([...index.records.keys()]).toEqual(['alpha', 'beta']);
    expect(index.nameOfUid('u-1')).toBe('alpha');
    expect(index.serverNamed('beta')).toBeUndefined();
    expect(index.editorRuns('alpha')).toBe(true);
    expect(index.running()).toEqual(['alpha']);
    expect([...index.editorsToSample().keys()]).toEqual(['alpha']);
    expect(index.routeTo(8010)).toEqual({ host: '127.0.0.1', port: 8010 });
    expect(index.eventsOf('alpha').map((e) => e.message)).toEqual(['alpha']);
    alive.delete('alpha');
    expect(index.editorRuns('alpha')).toBe(false);
    expect(index.endpointOf('alpha')).toBeUndefined();
    expect(index.running()).toEqual([]);
  });
});

describe('TypedEvents', () => {
  it('calls the listeners of one event in order; one added during an emit hears only the next', () => {
    const events = new TypedEvents<{ tick: number }>();
    const heard: string[] = [];
    events.on('tick', (n) => {
      heard.push(`first ${n}`);
      if (n === 1) events.on('tick', (m) => heard.push(`late ${m}`));
    });
    events.on('tick', (n) => heard.push(`second ${n}`));
    events.emit('tick', 1);
    events.emit('tick', 2);
    expect(heard).toEqual(['first 1', 'second 1', 'first 2', 'second 2', 'late 2']);
    expect(events.listenerCount('tick')).toBe(3);
    events.clear();
    expect(events.listenerCount('tick')).toBe(0);
  });
});
