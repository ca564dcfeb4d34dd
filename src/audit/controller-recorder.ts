// The controller's own acts, read from the index rather than from the controller's code: each time
// a server's record changes, the events its status commit added (src/index/server-events.ts, made
// from the transition itself) are looked at, and those that are an act of the controller become
// entries: an idle stop (reason IdleTimeout, once Stopped), a stop to make room for another start
// (StoppedForCapacity), and a restore of its work from the persistence target (the Restored
// condition turning True, or RestoreFailed).
import type { ServerEvent } from '../index/records.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { AuditInput } from './entry.ts';

/** Reasons of the controller's own stops, with the action each records, once the phase is Stopped. */
const STOPS: Record<string, string> = { IdleTimeout: 'idle-stop', StoppedForCapacity: 'capacity-stop' };

export interface ControllerRecorderDeps {
  index: ServerIndex;
  record(input: AuditInput): void;
}

/** Follows the index; returns the removal of its listeners. */
export function recordControllerActs(deps: ControllerRecorderDeps): () => void {
  const { index } = deps;
  /** The newest event already looked at, by server: events are kept in memory, so each is new once. */
  const seen = new Map<string, ServerEvent>();
  const offChanged = index.on('changed', (name) => {
    const events = index.eventsOf(name);
    const last = seen.get(name);
    const from = last === undefined ? 0 : events.lastIndexOf(last) + 1;
    if (events.length > 0) seen.set(name, events.at(-1)!);
    const server = index.serverNamed(name);
    const status = server?.status;
    // One commit can add the same act twice (a phase's reason and a condition's): one entry each.
    const done = new Set<string>();
    const record = (input: AuditInput) => {
      if (done.has(input.action + input.outcome)) return;
      done.add(input.action + input.outcome);
      deps.record(input);
    };
    for (const event of events.slice(from)) {
      const base = { actor: 'controller', door: 'controller' as const, server_id: server?.metadata.uid ?? null, server_name: name };
      const stop = STOPS[event.reason];
      if (stop && status?.phase === 'Stopped' && status.reason === event.reason) {
        record({ ...base, action: stop, outcome: 'ok', detail: event.message });
      } else if (event.reason === 'Restored') {
        record({ ...base, action: 'restore', outcome: 'ok', detail: event.message });
      } else if (event.reason === 'RestoreFailed') {
        record({ ...base, action: 'restore', outcome: 'failed', code: 'RESTORE_FAILED', detail: event.message });
      }
    }
  });
  const offDeleted = index.on('deleted', (name) => seen.delete(name));
  return () => {
    offChanged();
    offDeleted();
  };
}
