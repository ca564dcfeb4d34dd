// Which lifecycle commands are due, and which the editor waits for: the rules of
// src/devcontainer/lifecycle.ts over hand-made plans and records.
import { describe, expect, it } from 'vitest';
import { dueSteps, failure, stepsBeforeStart } from '../../src/devcontainer/lifecycle.ts';
import type { DevcontainerPlan, LifecycleName, LifecycleState, LifecycleStep } from '../../src/devcontainer/types.ts';

const step = (name: LifecycleName): LifecycleStep => ({ name, commands: [{ command: { shell: `echo ${name}` } }] });
const ALL: LifecycleName[] = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand', 'postStartCommand', 'postAttachCommand'];

function plan(names: LifecycleName[] = ALL, waitFor: LifecycleName = 'updateContentCommand'): Pick<DevcontainerPlan, 'lifecycle' | 'waitFor'> {
  return { lifecycle: Object.fromEntries(names.map((n) => [n, step(n)])), waitFor };
}

const at = '2026-11-30T00:00:00.000Z';
const ok: LifecycleState = { state: 'Succeeded', at };
const KEY = 'key-1';

describe('dueSteps', () => {
  it('runs every step but postAttach, in order, for a new workspace', () => {
    expect(dueSteps(plan(), {}, KEY, new Set())).toEqual(['onCreateCommand', 'updateContentCommand', 'postCreateCommand', 'postStartCommand']);
  });

  it('never runs a once-per-workspace step that succeeded, but postStart at every start', () => {
    const recorded = { onCreateCommand: ok, updateContentCommand: ok, postCreateCommand: ok, postStartCommand: ok };
    expect(dueSteps(plan(), recorded, KEY, new Set())).toEqual(['postStartCommand']);
    expect(dueSteps(plan(), recorded, KEY, new Set(['postStartCommand']))).toEqual([]);
  });

  it('runs again a step cut short (Running when it ended)', () => {
    const recorded = { onCreateCommand: ok, updateContentCommand: { state: 'Running', at } as LifecycleState };
    expect(dueSteps(plan(), recorded, KEY, new Set())).toEqual(['updateContentCommand', 'postCreateCommand', 'postStartCommand']);
  });

  it('holds a failed chain under the same key, and runs it again from the failed step under another', () => {
    const recorded: Partial<Record<LifecycleName, LifecycleState>> = {
      onCreateCommand: ok,
      updateContentCommand: { state: 'Failed', exitCode: 2, message: 'updateContentCommand exited with code 2: boom', at, under: KEY },
      postCreateCommand: { state: 'Skipped', at, under: KEY },
      postStartCommand: { state: 'Skipped', at, under: KEY },
    };
    expect(dueSteps(plan(), recorded, KEY, new Set())).toEqual([]);
    expect(dueSteps(plan(), recorded, 'key-2', new Set())).toEqual(['updateContentCommand', 'postCreateCommand', 'postStartCommand']);
  });

  it('leaves out the steps the plan does not have', () => {
    expect(dueSteps(plan(['postCreateCommand', 'postAttachCommand']), {}, KEY, new Set())).toEqual(['postCreateCommand']);
  });
});

describe('stepsBeforeStart', () => {
  const due: LifecycleName[] = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand', 'postStartCommand'];

  it('waits for updateContentCommand by default', () => {
    expect(stepsBeforeStart(plan(), due)).toEqual(['onCreateCommand', 'updateContentCommand']);
  });

  it('waits for postCreateCommand, or for everything up to postStart, when waitFor says so', () => {
    expect(stepsBeforeStart(plan(ALL, 'postCreateCommand'), due)).toEqual(['onCreateCommand', 'updateContentCommand', 'postCreateCommand']);
    expect(stepsBeforeStart(plan(ALL, 'postStartCommand'), due)).toEqual(due);
    // postAttach needs a person: waiting for it is waiting for postStart.
    expect(stepsBeforeStart(plan(ALL, 'postAttachCommand'), due)).toEqual(due);
  });

  it('waits for nothing when only later steps are due', () => {
    expect(stepsBeforeStart(plan(ALL, 'onCreateCommand'), ['postCreateCommand', 'postStartCommand'])).toEqual([]);
  });
});

describe('failure', () => {
  it('names the step, the command of the object form, how it ended and its last line', () => {
    expect(failure('postCreateCommand', undefined, { exitCode: 2 }, 'npm ERR! missing script')).toBe('postCreateCommand exited with code 2: npm ERR! missing script');
    expect(failure('postCreateCommand', 'db', { exitCode: null, signal: 'SIGKILL' }, '')).toBe('postCreateCommand (db) was ended by SIGKILL');
    expect(failure('onCreateCommand', undefined, { exitCode: null, error: 'make: no such program or folder' }, 'x')).toBe('onCreateCommand could not start: make: no such program or folder');
  });
});
