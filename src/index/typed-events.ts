// A small typed event emitter: each event has one payload whose type the event's name fixes, so a
// listener cannot be wired to the wrong arguments (as positional EventEmitter strings allowed).
// on() returns its own removal; a listener added or removed during an emit affects the next one.

/** Listeners by event; `Events` maps each event's name to its payload's type. */
export class TypedEvents<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  /** Calls `listener` with each payload of `event` from now on; returns its removal. */
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => this.off(event, listener);
  }

  off<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): void {
    this.#listeners.get(event)?.delete(listener as (payload: never) => void);
  }

  /** Calls each listener of `event`, in the order they were added; a listener's error is thrown to the emitter, as EventEmitter does. */
  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event);
    if (!set || set.size === 0) return;
    for (const listener of [...set]) (listener as (payload: Events[K]) => void)(payload);
  }

  listenerCount(event: keyof Events): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  /** Removes every listener. */
  clear(): void {
    this.#listeners.clear();
  }
}
