import { describe, expect, it } from 'vitest';
import { deriveConditions, setCondition } from '../../src/controller/conditions.ts';
import type { EditorServerStatus } from '../../src/manifests/types.ts';

describe('conditions', () => {
  it('keeps the transition time while a condition holds, and moves it when it flips', () => {
    const status: EditorServerStatus = { phase: 'Starting' };
    setCondition(status, { type: 'Ready', status: 'False', reason: 'Starting' }, new Date('2026-01-01T00:00:00Z'));
    setCondition(status, { type: 'Ready', status: 'False', reason: 'Starting' }, new Date('2026-01-01T00:05:00Z'));
    expect(status.conditions).toEqual([{ type: 'Ready', status: 'False', reason: 'Starting', lastTransitionTime: '2026-01-01T00:00:00.000Z' }]);
    setCondition(status, { type: 'Ready', status: 'True', reason: 'HealthzAnswered' }, new Date('2026-01-01T00:06:00Z'));
    expect(status.conditions![0].lastTransitionTime).toBe('2026-01-01T00:06:00.000Z');
  });

  it('reports Ready only for a running editor, with the failure reason otherwise', () => {
    const running: EditorServerStatus = { phase: 'Running', workspacePath: '/w' };
    deriveConditions(running);
    expect(running.conditions!.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['WorkspaceReady', 'True', 'Created'], ['Ready', 'True', 'HealthzAnswered'],
    ]);
    const failed: EditorServerStatus = { phase: 'Failed', reason: 'Crashed' };
    deriveConditions(failed);
    expect(failed.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Crashed' })]);
    // The status's words come along: what the runtime said keeps the editor from serving.
    const pulling: EditorServerStatus = { phase: 'Starting', reason: 'ImagePullBackOff', message: 'Back-off pulling image' };
    deriveConditions(pulling);
    expect(pulling.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'False', reason: 'ImagePullBackOff', message: 'Back-off pulling image' })]);
  });
});
