// The proxy's traffic per server, counted for GET /metrics. Each call from the proxy adds to plain
// numbers in a map (one lookup of the port's owner, no allocation once a server has its entry);
// prom-client reads them only when scraped.
import type { ProxyObserver } from '../proxy/editor-proxy.ts';

/** Requests by status class: 1xx … 5xx, then anything outside 100–599. */
export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other'] as const;

export interface ServerTraffic {
  /** Proxied HTTP requests, indexed as STATUS_CLASSES. */
  requests: number[];
  /** Bytes from the browser toward the editor: HTTP request bodies and WebSocket data. */
  received: number;
  /** Bytes from the editor toward the browser: HTTP responses with their headers, and WebSocket data. */
  sent: number;
  websocketsOpened: number;
  websocketsOpen: number;
}

export class ProxyTraffic {
  readonly #byName = new Map<string, ServerTraffic>();
  readonly #owner: (port: number) => string | undefined;
  readonly observer: ProxyObserver;

  /** owner: the server a port belongs to now (the port allocator's), undefined for none. */
  constructor(owner: (port: number) => string | undefined) {
    this.#owner = owner;
    this.observer = {
      request: (port, status, bytesIn, bytesOut) => {
        const counts = this.#of(port);
        if (!counts) return;
        counts.requests[status >= 100 && status < 600 ? Math.floor(status / 100) - 1 : 5]++;
        counts.received += bytesIn;
        counts.sent += bytesOut;
      },
      socketOpened: (port) => {
        const counts = this.#of(port);
        if (!counts) return;
        counts.websocketsOpened++;
        counts.websocketsOpen++;
      },
      socketData: (port, bytes, fromClient) => {
        const counts = this.#of(port);
        if (!counts) return;
        if (fromClient) counts.received += bytes;
        else counts.sent += bytes;
      },
      socketClosed: (port) => {
        const counts = this.#of(port);
        // The port may have changed hands while the socket was open: never below zero.
        if (counts && counts.websocketsOpen > 0) counts.websocketsOpen--;
      },
    };
  }

  /** The server's counts; undefined when the proxy has not carried any of its traffic. */
  get(name: string): ServerTraffic | undefined {
    return this.#byName.get(name);
  }

  /** The server was deleted: its counts go. */
  forget(name: string): void {
    this.#byName.delete(name);
  }

  /** Drops the entries of servers that no longer exist (a late request may have made one after the delete). */
  keepOnly(exists: (name: string) => boolean): void {
    for (const name of this.#byName.keys()) if (!exists(name)) this.#byName.delete(name);
  }

  #of(port: number): ServerTraffic | undefined {
    const name = this.#owner(port);
    if (name === undefined) return undefined;
    let counts = this.#byName.get(name);
    if (!counts) {
      counts = { requests: [0, 0, 0, 0, 0, 0], received: 0, sent: 0, websocketsOpened: 0, websocketsOpen: 0 };
      this.#byName.set(name, counts);
    }
    return counts;
  }
}
