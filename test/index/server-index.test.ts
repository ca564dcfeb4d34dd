// The index the controller writes (ServerTable): its events come as typed payloads (a reconcile's
// figures in one object, not positional arguments), a listener's removal is what on() returns,
// and what it answers is what the controller wrote, at the moment it is asked. The proxy's routing
// policy reads it: only a Running editor, or a Starting one that was not woken, is routed to.
import { describe, expect, it } from 'vitest';
import type { Reconciled } from '../../src/index/server-index.ts';
import { ServerTable } from '../../src/index/server-table.ts';
import { TypedEvents } from '../../src/index/typed-events.ts';
import type { EditorServer, Phase } from '../../src/manifests/types.ts';
import { routableEndpoint } from '../../src/proxy/routable.ts';

const REF = { kind: 'process', pid: 4242, startTicks: 7 };

function server(name: string, phase?: Phase, extra: Partial<EditorServer['status']> = {}): EditorServer {
  return {
    apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name, uid: `u-${name}` },
    spec: { running: true }, ...(phase ? { status: { phase, ...extra } } : {}),
  } as EditorServer;
}

function table() {
  const alive = new Set<string>(['alpha']);
  const uids = new Map([['u-1', 'alpha']]);
  const index = new ServerTable({ nameOfUid: (uid) => uids.get(uid), alive: (name) => alive.has(name) });
  index.setRecord({ name: 'alpha', server: server('alpha', 'Running') });
  index.setRecord({ name: 'beta' });
  index.setEditor('alpha', REF, { host: '127.0.0.1', port: 8010 });
  return { index, alive };
}

describe('the server index', () => {
  it('tells a reconcile as one typed payload, and changes and deletions by name', () => {
    const { index } = table();
    const seen: Array<Reconciled | string> = [];
    index.on('reconciled', (done) => seen.push(done));
    index.on('changed', (name) => seen.push(`changed ${name}`));
    index.on('deleted', (name) => seen.push(`deleted ${name}`));
    const failure = new Error('no room');
    index.reconciled({ name: 'alpha', run: 3, waiting: false, seconds: 0.25, error: failure });
    index.changed('beta');
    index.deleted('beta');
    expect(seen).toEqual([{ name: 'alpha', run: 3, waiting: false, seconds: 0.25, error: failure }, 'changed beta', 'deleted beta']);
  });

  it('stops calling a listener once the removal on() returned is called', () => {
    const { index } = table();
    const names: string[] = [];
    const off = index.on('changed', (name) => names.push(name));
    index.changed('alpha');
    off();
    index.changed('beta');
    expect(names).toEqual(['alpha']);
  });

  it('answers with what the controller wrote, at the moment it is asked', () => {
    const { alive, index } = table();
    expect([...index.records.keys()]).toEqual(['alpha', 'beta']);
    expect(index.nameOfUid('u-1')).toBe('alpha');
    expect(index.serverNamed('beta')).toBeUndefined();
    expect(index.editorRuns('alpha')).toBe(true);
    expect(index.running()).toEqual(['alpha']);
    expect([...index.editorsToSample()]).toEqual([['alpha', REF]]);
    index.events.add('alpha', { time: 't', type: 'Normal', reason: 'Started', message: 'alpha' });
    expect(index.eventsOf('alpha').map((e) => e.message)).toEqual(['alpha']);
    // The runtime says it is gone before the controller has looked: editorRuns asks it, running() does not.
    alive.delete('alpha');
    expect(index.editorRuns('alpha')).toBe(false);
    expect(index.running()).toEqual(['alpha']);
    index.clearEditor('alpha');
    expect(index.endpointOf('alpha')).toBeUndefined();
    expect(index.running()).toEqual([]);
  });

  it('counts every change to the records, and forgets everything of a dropped server', () => {
    const { index } = table();
    const before = index.recordChanges();
    index.setRecord({ name: 'alpha', server: server('alpha', 'Stopped') });
    expect(index.recordChanges()).toBe(before + 1);
    index.setWaking('alpha', true);
    index.events.add('alpha', { time: 't', type: 'Normal', reason: 'Started', message: 'alpha' });
    index.drop('alpha');
    expect(index.recordChanges()).toBe(before + 2);
    expect(index.records.has('alpha')).toBe(false);
    expect(index.running()).toEqual([]);
    expect(index.waking('alpha')).toBe(false);
    expect(index.eventsOf('alpha')).toEqual([]);
  });

  it('routes to a Running editor, and to a Starting one only when it was not woken', () => {
    const { index } = table();
    const ports = { owner: (port: number) => (port === 8010 ? 'alpha' : undefined) };
    expect(routableEndpoint(index, ports, 8010)).toEqual({ host: '127.0.0.1', port: 8010 });
    expect(routableEndpoint(index, ports, 8011)).toBeUndefined();
    index.setRecord({ name: 'alpha', server: server('alpha', 'Starting') });
    expect(routableEndpoint(index, ports, 8010)).toEqual({ host: '127.0.0.1', port: 8010 });
    index.setWaking('alpha', true);
    expect(routableEndpoint(index, ports, 8010)).toBeUndefined();
    expect(index.wakeState('alpha')).toEqual({ state: 'starting' });
    index.setRecord({ name: 'alpha', server: server('alpha', 'Failed', { message: 'code-server exited with code 1' }) });
    expect(index.wakeState('alpha')).toEqual({ state: 'failed', message: 'code-server exited with code 1' });
    // Running again: the wake is over, and the proxy routes.
    index.setRecord({ name: 'alpha', server: server('alpha', 'Running') });
    expect(index.wakeState('alpha')).toBeUndefined();
    expect(index.waking('alpha')).toBe(false);
    expect(routableEndpoint(index, ports, 8010)).toEqual({ host: '127.0.0.1', port: 8010 });
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
