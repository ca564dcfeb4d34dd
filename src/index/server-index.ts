// The read-only index of servers: what the API, the proxy, metrics and the dashboard's feed read
// about the servers (records, endpoints, wake state, the editors running) and the typed events
// that say when to look again. The controller is its only writer (the ServerTable in
// server-table.ts); what a reader may ask the controller to do is in commands.ts, not here.
import type { EditorServer, WakeState } from '../manifests/types.ts';
import type { EditorEndpoint, RuntimeRef } from '../runtime/interface.ts';
import type { ServerEvent, ServerRecord } from './records.ts';

export type { ServerEvent, ServerRecord };

/** One reconcile of one server ended. */
export interface Reconciled {
  readonly name: string;
  /** How many reconciles of this name have started, this one included. */
  readonly run: number;
  /** It only waited for news (an exit about to be reported) and decided nothing. */
  readonly waiting: boolean;
  readonly seconds: number;
  /** What it threw; undefined when it did not. */
  readonly error: unknown;
}

/** The index's events, each with its payload. */
export interface IndexEvents {
  /** The server's record changed: a status written, a manifest found invalid, or the server gone. */
  changed: string;
  /** The controller no longer manages the server (deleted, or its file gone for good). */
  deleted: string;
  /** A reconcile ended (it may have read a hand-edited spec without writing status). */
  reconciled: Reconciled;
}

export interface ServerIndex {
  /** Every server the controller knows, by manifest name, in the order it learned of them. */
  readonly records: ReadonlyMap<string, ServerRecord>;
  /** A count that moves with every change to `records` (a record set, changed or removed), where the index keeps one. */
  recordChanges?(): number;
  /** The name of the server with this uid. */
  nameOfUid(uid: string): string | undefined;
  /** The server's last valid manifest, as the controller read it. */
  serverNamed(name: string): EditorServer | undefined;
  /** Where the server's running editor answers, if it runs. */
  endpointOf(name: string): EditorEndpoint | undefined;
  /** True while a server woken after an idle stop has not answered yet (the proxy shows the starting page). */
  waking(name: string): boolean;
  /** Where a server stopped for idleness is on its way back. */
  wakeState(name: string): WakeState | undefined;
  /** True when the server's editor runs, checked with the runtime now (not only the controller's memory). */
  editorRuns(name: string): boolean;
  /** The names of the servers whose editor runs, by the controller's memory (no check with the runtime). */
  running(): string[];
  /** The runtime's handle of each running editor, by server name: what the stats sampler samples. */
  editorsToSample(): Map<string, RuntimeRef>;
  /** The server's recent events, oldest first. */
  eventsOf(name: string): ServerEvent[];
  /** Calls `listener` with each payload of `event` from now on; returns its removal. */
  on<K extends keyof IndexEvents>(event: K, listener: (payload: IndexEvents[K]) => void): () => void;
  off<K extends keyof IndexEvents>(event: K, listener: (payload: IndexEvents[K]) => void): void;
}
