// A stand-in for the index the controller feeds (src/index/): records set by hand and typed
// events emitted by hand, for the parts that only read it (the feed, the watch streams).
import type { ServerRecord } from '../../src/index/records.ts';
import type { IndexEvents } from '../../src/index/server-index.ts';
import { TypedEvents } from '../../src/index/typed-events.ts';

export function fakeIndex() {
  return Object.assign(new TypedEvents<IndexEvents>(), { records: new Map<string, ServerRecord>() });
}

/** The payload of a reconcile of `name` that ended without news. */
export function reconciled(name: string, run = 1): IndexEvents['reconciled'] {
  return { name, run, waiting: false, seconds: 0, error: undefined };
}
