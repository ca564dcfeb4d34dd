// The index as the controller feeds it: a read-only view of the Reconciler's records and live
// facts, with its events re-told as typed payloads. The Reconciler owns one (reconciler.index) and
// is its only writer; this file is the one place that knows how the controller names what the
// index answers (its references, its check that an editor is alive), so a change there changes only
// this file, not the readers.
import type { EditorServer, WakeState } from '../manifests/types.ts';
import type { EditorEndpoint, RuntimeRef } from '../runtime/interface.ts';
import type { ServerEvent, ServerRecord } from './records.ts';
import type { IndexEvents, ServerIndex } from './server-index.ts';
import { TypedEvents } from './typed-events.ts';

/** What the index reads of the controller (the Reconciler), and the events it emits. */
export interface IndexSource {
  readonly records: ReadonlyMap<string, ServerRecord> & { readonly changes?: number };
  readonly events: { list(name: string): ServerEvent[] };
  nameOfUid(uid: string): string | undefined;
  endpointOf(name: string): EditorEndpoint | undefined;
  routeTo(port: number): EditorEndpoint | undefined;
  wakeState(name: string): WakeState | undefined;
  refs(): Map<string, RuntimeRef>;
  isEditorRunning(name: string): boolean;
  /** The controller's events: ('changed' | 'deleted', name) and ('reconciled', name, run, waiting, seconds, error). */
  on(event: 'changed' | 'deleted' | 'reconciled', listener: (...args: any[]) => void): unknown;
}

export class LiveServerIndex implements ServerIndex {
  readonly #source: IndexSource;
  readonly #events = new TypedEvents<IndexEvents>();

  constructor(source: IndexSource) {
    this.#source = source;
    source.on('changed', (name: string) => this.#events.emit('changed', name));
    source.on('deleted', (name: string) => this.#events.emit('deleted', name));
    source.on('reconciled', (name: string, run: number, waiting: boolean, seconds: number, error: unknown) =>
      this.#events.emit('reconciled', { name, run, waiting, seconds, error }));
  }

  get records(): ReadonlyMap<string, ServerRecord> {
    return this.#source.records;
  }

  recordChanges(): number {
    return this.#source.records.changes ?? Number.NaN;
  }

  nameOfUid(uid: string): string | undefined {
    return this.#source.nameOfUid(uid);
  }

  serverNamed(name: string): EditorServer | undefined {
    return this.#source.records.get(name)?.server;
  }

  endpointOf(name: string): EditorEndpoint | undefined {
    return this.#source.endpointOf(name);
  }

  routeTo(port: number): EditorEndpoint | undefined {
    return this.#source.routeTo(port);
  }

  wakeState(name: string): WakeState | undefined {
    return this.#source.wakeState(name);
  }

  editorRuns(name: string): boolean {
    return this.#source.isEditorRunning(name);
  }

  running(): string[] {
    return [...this.#source.refs().keys()];
  }

  editorsToSample(): Map<string, RuntimeRef> {
    return this.#source.refs();
  }

  eventsOf(name: string): ServerEvent[] {
    return this.#source.events.list(name);
  }

  on<K extends keyof IndexEvents>(event: K, listener: (payload: IndexEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  off<K extends keyof IndexEvents>(event: K, listener: (payload: IndexEvents[K]) => void): void {
    this.#events.off(event, listener);
  }
}
