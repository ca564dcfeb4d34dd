// A server's recent events, in the manner of Kubernetes events: what changed in its status (a
// phase, a reason, a condition) and when, kept in memory, the last few per server, for the
// dashboard's GET /servers/{id}/events. Fed where status is committed (controller/status-commit.ts) and
// where a manifest is found invalid (controller/absence.ts); nothing here reads files or processes.
import type { ServerEvent } from './records.ts';
import type { Condition, EditorServerStatus, Phase } from '../manifests/types.ts';
import { describeRef } from '../runtime/interface.ts';

export type { ServerEvent };

/** Events kept per server: the oldest go first. */
export const MAX_EVENTS_PER_SERVER = 100;
/** A longer message (an invalid manifest's problems) is cut here, so memory stays bounded. */
const MAX_MESSAGE_CHARS = 2000;

/** The reason an event gets when the status names none: the phase's own word. */
const PHASE_REASON: Record<Phase, string> = {
  Pending: 'Pending',
  Provisioning: 'Provisioning',
  Stopped: 'Stopped',
  Starting: 'Starting',
  Running: 'Started',
  Stopping: 'Stopping',
  Failed: 'Failed',
  Terminating: 'Terminating',
};

/** Reasons that say something went wrong, whatever the phase (a restart after a crash is Starting/BackOff). */
const WARNING_REASON = /Fail|Invalid|Crash|BackOff|Unhealthy|InUse|Unavailable|Exited|Unschedulable|NotReady|ErrImage/;

/** Ready mirrors the phase (see controller/conditions.ts): its changes are the phase's events already. */
const DERIVED_CONDITIONS = new Set(['Ready']);

/**
 * The events between two statuses of a server: one for a new phase or reason, one for each
 * condition whose status or reason moved. Empty when nothing an operator would follow changed
 * (a new observedGeneration, a reference written again).
 */
export function statusEvents(before: EditorServerStatus | undefined, after: EditorServerStatus, now = new Date()): ServerEvent[] {
  const time = now.toISOString();
  const events: ServerEvent[] = [];
  if (before?.phase !== after.phase || before?.reason !== after.reason) {
    const reason = after.reason ?? PHASE_REASON[after.phase];
    events.push({
      time,
      type: after.phase === 'Failed' || WARNING_REASON.test(reason) ? 'Warning' : 'Normal',
      reason,
      message: after.message ?? phaseMessage(before, after),
    });
  }
  for (const condition of after.conditions ?? []) {
    if (DERIVED_CONDITIONS.has(condition.type)) continue;
    const earlier = before?.conditions?.find((c) => c.type === condition.type);
    if (earlier && earlier.status === condition.status && earlier.reason === condition.reason) continue;
    const reason = condition.reason ?? condition.type;
    events.push({
      time,
      type: condition.status === 'False' && WARNING_REASON.test(reason) ? 'Warning' : 'Normal',
      reason,
      message: condition.message ?? conditionMessage(condition),
    });
  }
  return events;
}

function phaseMessage(before: EditorServerStatus | undefined, after: EditorServerStatus): string {
  const from = before ? `${before.phase} -> ` : '';
  const ref = after.runtimeRef;
  const where = after.phase === 'Running' && ref ? ` with ${describeRef(ref)}${after.port ? ` on port ${after.port}` : ''}` : '';
  return `${from}${after.phase}${where}`;
}

function conditionMessage(condition: Condition): string {
  return `${condition.type} is ${condition.status}`;
}

/** The recent events of every server the controller knows, by manifest name; bounded per server. */
export class ServerEvents {
  readonly #byName = new Map<string, ServerEvent[]>();

  /** Records what changed between two statuses of the server (nothing when nothing did). */
  recordStatus(name: string, before: EditorServerStatus | undefined, after: EditorServerStatus): void {
    for (const event of statusEvents(before, after)) this.add(name, event);
  }

  /** The server's manifest became invalid (or its problems changed): a Warning naming them. */
  recordInvalid(name: string, problems: string[]): void {
    this.add(name, {
      time: new Date().toISOString(),
      type: 'Warning',
      reason: 'ManifestInvalid',
      message: `the manifest is invalid; the server is left as it was until it is fixed: ${problems.join('; ')}`,
    });
  }

  add(name: string, event: ServerEvent): void {
    const message = event.message.length > MAX_MESSAGE_CHARS ? `${event.message.slice(0, MAX_MESSAGE_CHARS - 1)}…` : event.message;
    const list = this.#byName.get(name) ?? [];
    list.push({ ...event, message });
    if (list.length > MAX_EVENTS_PER_SERVER) list.splice(0, list.length - MAX_EVENTS_PER_SERVER);
    this.#byName.set(name, list);
  }

  /** The server's events, oldest first (a copy). */
  list(name: string): ServerEvent[] {
    return [...(this.#byName.get(name) ?? [])];
  }

  /** The controller no longer knows the server (deleted, or its file gone): its events go too. */
  forget(name: string): void {
    this.#byName.delete(name);
  }
}
