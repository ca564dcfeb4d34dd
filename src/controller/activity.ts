// When each server was last used: what a person does reaches an editor through the service's
// proxy (HTTP requests, WebSocket bytes either way), and code-server reports its own heartbeat
// while a browser is attached. Idle autostop and "stop the least recently active idle editor"
// read it; metrics export it. Touched on the request path, so a touch is one map write.

export class ActivityTracker {
  readonly #last = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** The server was used now (or at `at`, ms since the epoch, when later than what is known). */
  touch(name: string, at = this.#now()): void {
    const known = this.#last.get(name);
    if (known === undefined || at > known) this.#last.set(name, at);
  }

  /** When the server was last used, ms since the epoch; undefined when never seen since the service started. */
  lastActivity(name: string): number | undefined {
    return this.#last.get(name);
  }

  /** The server is gone: its entry goes too (the map stays as large as the fleet). */
  forget(name: string): void {
    this.#last.delete(name);
  }

  names(): IterableIterator<string> {
    return this.#last.keys();
  }
}
