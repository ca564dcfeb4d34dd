// The watch stream, GET servers?watch=1 (server-sent events, data-only messages
// {"type": "ADDED" | "MODIFIED" | "DELETED" | "SYNCED", "object": record}). On every (re)connect
// the service sends each record as ADDED, then SYNCED: a fresh map is built until SYNCED and
// then replaces the old one, so servers deleted while disconnected disappear.
import { apiUrl } from './http.ts';
import type { ServerRecord, WatchEvent } from './types.ts';

export type Connection = 'connecting' | 'live' | 'reconnecting';

export interface WatchHandlers {
  /** The whole set of servers, after each SYNCED and on every change after it. */
  onServers(servers: Map<string, ServerRecord>): void;
  onConnection(state: Connection): void;
}

export interface Watch {
  close(): void;
}

const MIN_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;

export function watchServers(handlers: WatchHandlers): Watch {
  let current = new Map<string, ServerRecord>();
  let pending: Map<string, ServerRecord> | undefined;
  let source: EventSource | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delay = MIN_DELAY_MS;
  let closed = false;

  const connect = () => {
    if (closed) return;
    // Until SYNCED, the events describe a new listing.
    pending = new Map();
    source = new EventSource(apiUrl('servers?watch=1'));
    source.onmessage = (message) => {
      let event: WatchEvent;
      try {
        event = JSON.parse(message.data) as WatchEvent;
      } catch {
        return;
      }
      apply(event);
    };
    source.onerror = () => {
      // EventSource retries by itself; we take over to back off and to start a fresh listing.
      source?.close();
      source = undefined;
      handlers.onConnection('reconnecting');
      timer = setTimeout(connect, delay);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    };
  };

  const apply = (event: WatchEvent) => {
    if (event.type === 'SYNCED') {
      if (pending) current = pending;
      pending = undefined;
      delay = MIN_DELAY_MS;
      handlers.onConnection('live');
      handlers.onServers(current);
      return;
    }
    const record = event.object;
    if (!record?.id) return;
    if (pending) {
      if (event.type === 'DELETED') pending.delete(record.id);
      else pending.set(record.id, record);
      return;
    }
    // A new map each time, so subscribers can compare by identity.
    const next = new Map(current);
    if (event.type === 'DELETED') next.delete(record.id);
    else next.set(record.id, record);
    current = next;
    handlers.onServers(current);
  };

  handlers.onConnection('connecting');
  connect();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      source?.close();
    },
  };
}
