// What the API, the proxy and the other readers of the index may ask of the controller: a narrow
// set of commands, implemented by the controller (src/controller/commands.ts). Desired state goes
// into manifests (the store); these only queue, wait, wake and mark.
import type { QuotaLimit, QuotaRefusal } from './quota-gate.ts';
import type { ServerRecord } from './records.ts';

export interface ServerCommands {
  /** Queues the server for a reconcile. */
  enqueue(name: string): void;
  /** Queues the name and resolves once a reconcile started after the call has finished (and not merely waited), or the timeout passed. */
  reconcileNow(name: string, timeoutMs?: number): Promise<void>;
  /** Resolves with the record once it satisfies the predicate, or with what it is when the timeout passes. */
  waitFor(name: string, predicate: (record: ServerRecord | undefined) => boolean, timeoutMs: number): Promise<ServerRecord | undefined>;
  /** Asks a server stopped for idleness to start again; false for any other. */
  wake(name: string, why: string): boolean;
  /** Deletes the server at its next reconcile although its file is missing or invalid (DELETE /servers/{id}). */
  requestDeletion(name: string): void;
  /** What a refresh saw on the editor's /healthz; true when the verdict changed. */
  recordHealth(name: string, answered: boolean): boolean;
  /** A person opened the server's editor (its first tab, or again once every tab had closed): devcontainer.json's postAttachCommand is owed. */
  attached(name: string): void;
}

export type CapacityLimit = 'capacity.maxRunning' | 'capacity.maxMemoryMb' | QuotaLimit;

export type Admission =
  /** Room: the slot is held for the name until its editor runs or release(name). */
  | { kind: 'admitted' }
  /** No room, but an idle editor is being stopped for this start; the slot is held meanwhile. */
  | { kind: 'makingRoom'; victim: string; limit: CapacityLimit; message: string }
  /** No room: nothing was reserved. `quota` when a per-person limit refused it (capacity.perPerson). */
  | { kind: 'refused'; limit: CapacityLimit; message: string; quota?: QuotaRefusal };

/** The capacity decision a start passes before anything is written (the controller's Capacity). */
export interface CapacityGate {
  admit(name: string): Admission;
  release(name: string): void;
}

/** The port claims a create makes before its manifest exists (the controller's PortAllocator). */
export interface PortClaims {
  readonly range: { min: number; max: number };
  owner(port: number): string | undefined;
  portOf(name: string): number | undefined;
  reserve(name: string, port: number): boolean;
  allocate(name: string): Promise<number | undefined>;
  transfer(from: string, to: string): void;
  release(name: string): void;
}
