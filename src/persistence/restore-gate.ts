// Which servers are being restored, and where each stands: the controller reads it before a
// server's workspace and editor steps (src/controller/ensure-restored.ts) and waits on `changed`,
// so it acts again the moment a restore moves on, without polling.
import type { RestoreState } from '../controller/ensure-restored.ts';

interface Entry {
  state: RestoreState;
  /** Settles `changed` of the state shown now. */
  settle: () => void;
}

export class RestoreGate {
  readonly #entries = new Map<string, Entry>();

  /** Holds the server (or moves its message on): the controller waits until the restore is done. */
  restoring(name: string, message: string): void {
    this.#set(name, (changed) => ({ kind: 'restoring', message, changed }));
  }

  /** An attempt failed: the server stays held, its status says why, and the next attempt moves it on. */
  failed(name: string, message: string): void {
    this.#set(name, (changed) => ({ kind: 'failed', message, changed }));
  }

  /** Done: the controller records it (condition Restored True) and goes on. */
  restored(name: string, message: string): void {
    this.#set(name, () => ({ kind: 'restored', message }));
  }

  /** Lets the server go without a restore (it was deleted meanwhile, or the service stops). */
  release(name: string): void {
    this.#entries.get(name)?.settle();
    this.#entries.delete(name);
  }

  stateOf(name: string): RestoreState | undefined {
    return this.#entries.get(name)?.state;
  }

  /** True while the server is held (restoring, or failed and to be tried again). */
  holds(name: string): boolean {
    const kind = this.#entries.get(name)?.state.kind;
    return kind === 'restoring' || kind === 'failed';
  }

  /** Servers held now. */
  held(): string[] {
    return [...this.#entries.keys()].filter((name) => this.holds(name));
  }

  /** The controller recorded a finished restore: nothing more to show. */
  recorded(name: string): void {
    if (this.#entries.get(name)?.state.kind === 'restored') this.#entries.delete(name);
  }

  releaseAll(): void {
    for (const name of [...this.#entries.keys()]) this.release(name);
  }

  #set(name: string, make: (changed: Promise<void>) => RestoreState): void {
    const previous = this.#entries.get(name);
    let settle!: () => void;
    const changed = new Promise<void>((resolve) => (settle = resolve));
    this.#entries.set(name, { state: make(changed), settle });
    previous?.settle();
  }
}
