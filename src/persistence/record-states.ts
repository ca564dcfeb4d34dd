// Each server's record field `persistence` (its last snapshot, an error, work in progress), kept
// as one frozen object per server so an unchanged record stays the same object, and listeners
// told when one changes (the server feed re-serialises only those).
import { NO_SNAPSHOT, type ServerPersistence } from './service-types.ts';

export class RecordStates {
  readonly #states = new Map<string, ServerPersistence>();
  readonly #listeners = new Set<(name: string) => void>();

  of(name: string): ServerPersistence {
    return this.#states.get(name) ?? NO_SNAPSHOT;
  }

  /** Calls `listener(name)` when a server's state changed; returns its removal. */
  onChange(listener: (name: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  update(name: string, change: Partial<ServerPersistence>): void {
    const before = this.of(name);
    const after = { ...before, ...change };
    if (Object.entries(after).every(([key, value]) => before[key as keyof ServerPersistence] === value)) return;
    this.#states.set(name, Object.freeze(after));
    for (const listener of this.#listeners) listener(name);
  }

  delete(name: string): void {
    this.#states.delete(name);
  }

  dispose(): void {
    this.#listeners.clear();
  }
}
