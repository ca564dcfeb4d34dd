// The rules of devcontainer.json's lifecycle commands over a plan and what status recorded of
// them, as plain functions: which are due for a start, which the editor waits for, when a failed
// chain holds, and how a failure is told. The controller's step applies them
// (src/controller/ensure-lifecycle.ts).
import { LIFECYCLE_ORDER, ONCE_PER_WORKSPACE, type DevcontainerPlan, type LifecycleName, type LifecycleState } from './types.ts';

/** What status records of each lifecycle command (status.devcontainer.lifecycle). */
export type LifecycleRecord = Partial<Record<LifecycleName, LifecycleState>>;

const POST_START: LifecycleName = 'postStartCommand';
const POST_ATTACH: LifecycleName = 'postAttachCommand';

export const indexOf = (step: LifecycleName) => LIFECYCLE_ORDER.indexOf(step);
export const once = (step: LifecycleName) => ONCE_PER_WORKSPACE.includes(step);

/**
 * The steps due for the start under way, in order (postAttach is never among them: it follows
 * an attach). A once-per-workspace step is due unless it Succeeded, or it Failed (or was Skipped)
 * under the same key; one of those blocks the whole chain. A per-start step is due unless it ran
 * for this start.
 */
export function dueSteps(
  plan: Pick<DevcontainerPlan, 'lifecycle'>, recorded: LifecycleRecord, key: string, ranThisStart: ReadonlySet<LifecycleName>,
): LifecycleName[] {
  const present = LIFECYCLE_ORDER.filter((step) => plan.lifecycle[step] !== undefined && step !== POST_ATTACH);
  if (chainBlocked(plan, recorded, key)) return [];
  return present.filter((step) => (once(step) ? onceDue(recorded[step], key) : !ranThisStart.has(step)));
}

function onceDue(state: LifecycleState | undefined, key: string): boolean {
  if (!state || state.state === 'Running') return true; // never run, or cut short
  if (state.state === 'Succeeded') return false;
  return state.under !== key;
}

/** The due steps the editor waits for: up to and including waitFor (postStart at the latest: postAttach needs a person). */
export function stepsBeforeStart(plan: Pick<DevcontainerPlan, 'waitFor'>, due: readonly LifecycleName[]): LifecycleName[] {
  const last = Math.min(indexOf(plan.waitFor), indexOf(POST_START));
  return due.filter((step) => indexOf(step) <= last);
}

/** A once-per-workspace step Failed, or was Skipped, under this key: the chain runs no further until the key changes. */
export function chainBlocked(plan: Pick<DevcontainerPlan, 'lifecycle'>, recorded: LifecycleRecord, key: string): boolean {
  return ONCE_PER_WORKSPACE.some((step) => plan.lifecycle[step] !== undefined
    && (recorded[step]?.state === 'Failed' || recorded[step]?.state === 'Skipped') && recorded[step]?.under === key);
}

/** `postCreateCommand exited with code 2: <last line>`, and the like for a signal or a command that could not start. */
export function failure(step: LifecycleName, label: string | undefined, end: { exitCode: number | null; signal?: string; error?: string }, last: string): string {
  const who = label === undefined ? step : `${step} (${label})`;
  const how = end.error !== undefined ? `could not start: ${end.error}`
    : end.exitCode !== null ? `exited with code ${end.exitCode}`
      : `was ended by ${end.signal ?? 'a signal'}`;
  return `${who} ${how}${last && end.error === undefined ? `: ${last}` : ''}`;
}
