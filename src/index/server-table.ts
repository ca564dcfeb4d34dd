// The index's own state: every server's record, its running editor (the runtime's reference and
// where it answers), whether a woken editor is still on its way up, its recent events, and the
// typed events that tell readers to look again. The controller is its only writer (the methods
// under "written by the controller"); the API, the proxy, metrics and persistence read it through
// ServerIndex. Nothing here decides anything: the reconcile writes what it observed and did.
import type { EditorServer, WakeState } from '../manifests/types.ts';
import type { EditorEndpoint, RuntimeRef } from '../runtime/interface.ts';
import type { ServerRecord } from './records.ts';
import { ServerEvents } from './server-events.ts';
import type { IndexEvents, Reconciled, ServerIndex } from './server-index.ts';
import { TypedEvents } from './typed-events.ts';

/**
 * The records by name, counting every set and delete: every change to a record (a manifest read,
 * a status written, a manifest found invalid) ends in a set, so while the count stays the same no
 * record was touched, and GET /servers' kept list need not look at ten thousand of them to know.
 */
export class CountedRecords extends Map<string, ServerRecord> {
  changes = 0;

  override set(name: string, record: ServerRecord): this {
    this.changes++;
    return super.set(name, record);
  }

  override delete(name: string): boolean {
    this.changes++;
    return super.delete(name);
  }

  override clear(): void {
    this.changes++;
    super.clear();
  }
}

/** A server's running editor, as the controller launched or adopted it. */
export interface EditorLink {
  ref: RuntimeRef;
  /** Where it answers; undefined for an editor adopted before its port is known. */
  endpoint: EditorEndpoint | undefined;
}

export interface ServerTableOptions {
  /** The name holding a uid (the controller's uid book, which the table does not keep twice). */
  nameOfUid(uid: string): string | undefined;
  /** True when the runtime says the editor under `ref` is server `name`'s and runs, asked now. */
  alive(name: string, ref: RuntimeRef): boolean;
}

export class ServerTable implements ServerIndex {
  readonly records = new CountedRecords();
  /** What changed in each server's status, recently (GET /servers/{id}/events). */
  readonly events = new ServerEvents();
  /** The running editors, by name: O(running) to walk, however many servers are declared. */
  readonly #editors = new Map<string, EditorLink>();
  /** Woken after an idle stop and not answering yet: the proxy shows the starting page, not the editor. */
  readonly #waking = new Set<string>();
  readonly #emitter = new TypedEvents<IndexEvents>();
  readonly #options: ServerTableOptions;

  constructor(options: ServerTableOptions) {
    this.#options = options;
  }

  // --- Read by everyone (ServerIndex) ---

  recordChanges(): number {
    return this.records.changes;
  }

  nameOfUid(uid: string): string | undefined {
    return this.#options.nameOfUid(uid);
  }

  serverNamed(name: string): EditorServer | undefined {
    return this.records.get(name)?.server;
  }

  endpointOf(name: string): EditorEndpoint | undefined {
    return this.#editors.get(name)?.endpoint;
  }

  /** The runtime's reference to the server's running editor, as the controller knows it. */
  editorOf(name: string): RuntimeRef | undefined {
    return this.#editors.get(name)?.ref;
  }

  waking(name: string): boolean {
    return this.#waking.has(name);
  }

  /**
   * `starting`: still held by its idle stop, or woken and not answering yet; `refused`: its start
   * waits for capacity; `failed`: its start failed. Undefined once it runs (the proxy routes to
   * it), or for a server that was not stopped for idleness.
   */
  wakeState(name: string): WakeState | undefined {
    const server = this.records.get(name)?.server;
    if (!server?.spec.running || server.metadata.deletionTimestamp) {
      this.#waking.delete(name);
      return undefined;
    }
    const status = server.status;
    if (status?.idleStoppedAt) return { state: 'starting' };
    if (!this.#waking.has(name)) return undefined;
    if (status?.phase === 'Running') {
      this.#waking.delete(name);
      return undefined;
    }
    const message = status?.message ?? 'see GET /servers/{id}/logs';
    if (status?.phase === 'Failed') return { state: 'failed', message };
    if (status?.reason === 'CapacityExceeded') return { state: 'refused', message };
    if (status?.reason === 'QuotaExceeded') return { state: 'refused', message, quota: true };
    return { state: 'starting' };
  }

  editorRuns(name: string): boolean {
    const ref = this.#editors.get(name)?.ref;
    return ref !== undefined && this.#options.alive(name, ref);
  }

  running(): string[] {
    return [...this.#editors.keys()];
  }

  editorsToSample(): Map<string, RuntimeRef> {
    const refs = new Map<string, RuntimeRef>();
    for (const [name, editor] of this.#editors) refs.set(name, editor.ref);
    return refs;
  }

  eventsOf(name: string): ReturnType<ServerIndex['eventsOf']> {
    return this.events.list(name);
  }

  on<K extends keyof IndexEvents>(event: K, listener: (payload: IndexEvents[K]) => void): () => void {
    return this.#emitter.on(event, listener);
  }

  off<K extends keyof IndexEvents>(event: K, listener: (payload: IndexEvents[K]) => void): void {
    this.#emitter.off(event, listener);
  }

  // --- Written by the controller ---

  /** Stores a freshly read manifest in the name's record (kept, with its warnings, if there is one). */
  setRecord(record: ServerRecord): ServerRecord {
    const next = this.records.get(record.name) ?? record;
    next.server = record.server;
    next.problems = undefined;
    this.records.set(record.name, next);
    return next;
  }

  /** The server's editor runs under `ref` (launched, or adopted). */
  setEditor(name: string, ref: RuntimeRef, endpoint: EditorEndpoint | undefined): void {
    this.#editors.set(name, { ref, endpoint });
  }

  /** Where an adopted editor answers, once known. */
  setEndpoint(name: string, endpoint: EditorEndpoint | undefined): void {
    const editor = this.#editors.get(name);
    if (editor) editor.endpoint = endpoint;
  }

  /** The server's editor is gone (stopped, exited, or given up). */
  clearEditor(name: string): void {
    this.#editors.delete(name);
  }

  setWaking(name: string, waking: boolean): void {
    if (waking) this.#waking.add(name);
    else this.#waking.delete(name);
  }

  /** The controller no longer knows the server: its record, editor, events and wake mark go. */
  drop(name: string): void {
    this.records.delete(name);
    this.#editors.delete(name);
    this.#waking.delete(name);
    this.events.forget(name);
  }

  changed(name: string): void {
    this.#emitter.emit('changed', name);
  }

  deleted(name: string): void {
    this.#emitter.emit('deleted', name);
  }

  reconciled(done: Reconciled): void {
    this.#emitter.emit('reconciled', done);
  }
}
