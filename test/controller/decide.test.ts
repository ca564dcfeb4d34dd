// The reconcile decision on its own: each row an Observed (what reconcile saw) and the Action it
// must give, named after the rule; rows with two conditions at once pin the order of the rules.
// No runtime, no files, no clock: the same table holds whatever runs the editor.
import { describe, expect, it } from 'vitest';
import { decide, type Action, type Observed } from '../../src/controller/decide.ts';

const NOW = 1_700_000_000_000;

/** A server whose spec says running, whose editor does not run, with nothing else going on. */
const base: Observed = {
  wantRunning: true,
  alive: false,
  port: 8002,
  idleStop: 'none',
  recordedRunning: false,
  phase: 'Pending',
  now: NOW,
};

/** The same server with its editor running on its port. */
const running: Observed = { ...base, alive: true, editorPort: 8002, phase: 'Running', recordedRunning: true };

const restartStamp = { restartAt: '2024-05-01T10:00:00Z', restartHonoured: '2024-04-30T09:00:00Z' };
const crashed = { phase: 'Failed', reason: 'Crashed' } as const;
const heldForCapacity = { phase: 'Stopped', reason: 'StoppedForCapacity' } as const;
const backOff = { nextRestartAt: NOW + 4000 };

const rows: [rule: string, observed: Observed, expected: Action][] = [
  // 1. spec.running false
  ['stop: a running editor the spec wants stopped is stopped', { ...running, wantRunning: false }, { kind: 'stop', stopEditor: true }],
  ['stop: a server that does not run is recorded Stopped, nothing to stop', { ...base, wantRunning: false }, { kind: 'stop', stopEditor: false }],
  ['stop before restart: a pending restart stamp of a stopped server is only honoured', { ...running, wantRunning: false, ...restartStamp }, { kind: 'stop', stopEditor: true, honourRestart: restartStamp.restartAt }],
  ['stop: a stamp already honoured is not honoured again', { ...base, wantRunning: false, restartAt: 'x', restartHonoured: 'x' }, { kind: 'stop', stopEditor: false }],
  ['stop before move and eviction', { ...running, wantRunning: false, editorPort: 8001, evictedFor: 'other' }, { kind: 'stop', stopEditor: true }],
  ['stop before the idle hold, a crash, a failure and the back-off', { ...base, wantRunning: false, idleStop: 'holding', recordedRunning: true, ...crashed, ...backOff }, { kind: 'stop', stopEditor: false }],

  // 2. a restart stamp not yet honoured
  ['restart: a running editor is stopped and started again', { ...running, ...restartStamp }, { kind: 'restart', stopEditor: true, honourRestart: restartStamp.restartAt }],
  ['restart: a first stamp (none honoured before) counts', { ...running, restartAt: 'first' }, { kind: 'restart', stopEditor: true, honourRestart: 'first' }],
  ['restart: a server that does not run is started', { ...base, ...restartStamp }, { kind: 'restart', stopEditor: false, honourRestart: restartStamp.restartAt }],
  ['restart before move and eviction', { ...running, ...restartStamp, editorPort: 8001, evictedFor: 'other' }, { kind: 'restart', stopEditor: true, honourRestart: restartStamp.restartAt }],
  ['restart before the idle hold, a crash, a failure, capacity and the back-off', { ...base, ...restartStamp, idleStop: 'holding', recordedRunning: true, ...crashed, ...backOff }, { kind: 'restart', stopEditor: false, honourRestart: restartStamp.restartAt }],
  ['no restart: a stamp already honoured', { ...running, restartAt: 'x', restartHonoured: 'x' }, { kind: 'supervise' }],

  // 3. alive on another port
  ['move: a running editor on another port than its own is moved', { ...running, editorPort: 8001 }, { kind: 'move', from: 8001, to: 8002 }],
  ['move before eviction', { ...running, editorPort: 8001, evictedFor: 'other' }, { kind: 'move', from: 8001, to: 8002 }],
  ['no move: the port it runs on is not known', { ...running, editorPort: undefined }, { kind: 'supervise' }],
  ['no move: an editor that does not run, whatever port it had, is started', { ...base, editorPort: 8001 }, { kind: 'start', wake: false }],

  // 4. alive, and capacity needs its room
  ['evict: a running editor capacity stops for another start', { ...running, evictedFor: 'other' }, { kind: 'evict', for: 'other' }],
  ['no eviction of an editor that does not run', { ...base, evictedFor: 'other' }, { kind: 'start', wake: false }],

  // 5. alive
  ['supervise: a running editor the spec wants running', running, { kind: 'supervise' }],
  ['supervise: a running editor wins over the rules for one that does not run', { ...running, idleStop: 'holding', ...crashed, ...backOff }, { kind: 'supervise' }],

  // 6. idle stop
  ['hold: an idle stop holds the server stopped', { ...base, idleStop: 'holding', phase: 'Stopped', reason: 'IdleTimeout' }, { kind: 'hold', reason: 'idle-stop' }],
  ['hold for idleness before a crash, a failure, capacity and the back-off', { ...base, idleStop: 'holding', recordedRunning: true, ...crashed, ...backOff }, { kind: 'hold', reason: 'idle-stop' }],
  ['wake: a woken idle stop is lifted and the server starts', { ...base, idleStop: 'woken', phase: 'Stopped', reason: 'IdleTimeout' }, { kind: 'start', wake: true }],
  ['wake: lifting the idle stop clears the reason, so a Crashed one does not hold it', { ...base, idleStop: 'woken', ...crashed }, { kind: 'start', wake: true }],
  ['wake: lifting the idle stop clears the reason, so StoppedForCapacity does not hold it', { ...base, idleStop: 'woken', ...heldForCapacity }, { kind: 'start', wake: true }],
  ['wake, then a recorded editor that is gone is a crash', { ...base, idleStop: 'woken', recordedRunning: true }, { kind: 'record-crash', wake: true }],
  ['wake, then a back-off still running is waited for', { ...base, idleStop: 'woken', ...backOff }, { kind: 'wait', untilMs: backOff.nextRestartAt, wake: true }],

  // 7. a recorded editor that is gone
  ['record-crash: the status named a running editor and it is gone', { ...base, recordedRunning: true, phase: 'Running' }, { kind: 'record-crash', wake: false }],
  ['record-crash before a failure, capacity and the back-off', { ...base, recordedRunning: true, ...crashed, ...backOff }, { kind: 'record-crash', wake: false }],

  // 8. Failed, Crashed or Exited
  ['hold: Failed because it crashed (restartPolicy said no)', { ...base, ...crashed }, { kind: 'hold', reason: 'failed' }],
  ['hold: Failed because it exited (restartPolicy said no)', { ...base, phase: 'Failed', reason: 'Exited' }, { kind: 'hold', reason: 'failed' }],
  ['hold for failure before the back-off', { ...base, ...crashed, ...backOff }, { kind: 'hold', reason: 'failed' }],
  ['no hold: Failed for another reason (a crash loop) waits for its back-off', { ...base, phase: 'Failed', reason: 'CrashLoopBackOff', ...backOff }, { kind: 'wait', untilMs: backOff.nextRestartAt, wake: false }],
  ['no hold: Failed for another reason (unhealthy, port) is started again', { ...base, phase: 'Failed', reason: 'Unhealthy' }, { kind: 'start', wake: false }],
  ['no hold: Crashed is a reason only with phase Failed', { ...base, phase: 'Stopped', reason: 'Crashed' }, { kind: 'start', wake: false }],

  // 9. Stopped for capacity
  ['hold: stopped to make room, it stays stopped', { ...base, ...heldForCapacity }, { kind: 'hold', reason: 'stopped-for-capacity' }],
  ['hold for capacity before the back-off', { ...base, ...heldForCapacity, ...backOff }, { kind: 'hold', reason: 'stopped-for-capacity' }],
  ['no hold: StoppedForCapacity is a reason only with phase Stopped', { ...base, phase: 'Pending', reason: 'StoppedForCapacity' }, { kind: 'start', wake: false }],

  // 10. the back-off
  ['wait: a restart back-off that has not ended', { ...base, phase: 'Starting', reason: 'BackOff', ...backOff }, { kind: 'wait', untilMs: backOff.nextRestartAt, wake: false }],
  ['no wait: the back-off ends now', { ...base, nextRestartAt: NOW }, { kind: 'start', wake: false }],
  ['no wait: the back-off ended', { ...base, nextRestartAt: NOW - 1 }, { kind: 'start', wake: false }],

  // 11. otherwise
  ['start: a server the spec wants running, with nothing in the way', base, { kind: 'start', wake: false }],
  ['start: a server stopped on request, now wanted running', { ...base, phase: 'Stopped' }, { kind: 'start', wake: false }],
];

describe('decide', () => {
  it.each(rows)('%s', (_rule, observed, expected) => {
    expect(decide(observed)).toEqual(expected);
  });

  it('has a row for every action and every reason to hold', () => {
    const kinds = new Set(rows.map(([, , a]) => (a.kind === 'hold' ? `hold:${a.reason}` : a.kind)));
    expect([...kinds].sort()).toEqual([
      'evict', 'hold:failed', 'hold:idle-stop', 'hold:stopped-for-capacity', 'move', 'record-crash', 'restart', 'start', 'stop', 'supervise', 'wait',
    ]);
  });

  it('decides from plain data alone: the input is left as it was, and a JSON copy decides the same', () => {
    for (const [rule, observed] of rows) {
      const frozen = Object.freeze(structuredClone(observed));
      const action = decide(frozen);
      expect(decide(JSON.parse(JSON.stringify(observed))), rule).toEqual(action);
      expect(JSON.parse(JSON.stringify(action)), rule).toEqual(action);
    }
  });
});
