// Kubernetes-style conditions on a status: a transition time that moves only when the
// condition's status does, so rewriting the same facts changes nothing on disk.
import type { Condition, EditorServerStatus } from '../manifests/types.ts';

export function setCondition(status: EditorServerStatus, next: Omit<Condition, 'lastTransitionTime'>, now = new Date()): void {
  const conditions = status.conditions ?? [];
  const current = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = current && current.status === next.status ? current.lastTransitionTime : now.toISOString();
  const updated: Condition = { ...next, lastTransitionTime };
  status.conditions = current ? conditions.map((c) => (c === current ? updated : c)) : [...conditions, updated];
}

/** Derives the conditions a status reports from its phase and facts. */
export function deriveConditions(status: EditorServerStatus): void {
  // A workspace source's step sets the condition itself (Cloning, CloneFailed, Populated).
  if (status.workspacePath && !status.conditions?.some((c) => c.type === 'WorkspaceReady' && c.reason !== 'Created')) setCondition(status, { type: 'WorkspaceReady', status: 'True', reason: 'Created' });
  const ready = status.phase === 'Running';
  // Not ready: why, in the status's words (a crash, Unhealthy, or what the runtime said: ImagePullBackOff, NodeNotReady…).
  setCondition(status, {
    type: 'Ready',
    status: ready ? 'True' : 'False',
    reason: ready ? 'HealthzAnswered' : status.reason ?? status.phase,
    ...(!ready && status.message ? { message: status.message } : {}),
  });
}
