// The watch stream, GET servers?watch=1 (server-sent events, read by readEventStream; data-only
// messages {"type": "ADDED" | "MODIFIED" | "DELETED" | "SYNCED", "object": record}). On every (re)connect
// the service sends each record as ADDED, then SYNCED: a fresh map is built until SYNCED and
// then replaces the old one, so servers deleted while disconnected disappear. Changes after it are
// handed on together, at most one new map per BATCH_MS: at 10,000 servers a stats sample moves a
// hundred records at once, and a copy of the map and a re-sort per record would be wasted.
import { readEventStream } from './event-stream.ts';
import { apiUrl } from './http.ts';
import type { ServerRecord, WatchEvent } from './types.ts';

export type Connection = 'connecting' | 'live' | 'reconnecting';

export interface WatchHandlers {
  /** The whole set of servers, after each SYNCED and on every change after it. */
  onServers(servers: Map<string, ServerRecord>): void;
  onConnection(state: Connection): void;
  /** While a listing arrives: how many servers it has brought so far (at most every PROGRESS_MS). */
  onProgress?(received: number): void;
}

export interface Watch {
  close(): void;
}

const MIN_DELAY_MS = 500;
const MAX_DELAY_MS = 15_000;
const BATCH_MS = 50;
const PROGRESS_MS = 250;

export function watchServers(handlers: WatchHandlers): Watch {
  let current = new Map<string, ServerRecord>();
  let pending: Map<string, ServerRecord> | undefined;
  /** Changes since the last map handed on, applied to a copy of it; handed on when `flush` runs. */
  let next: Map<string, ServerRecord> | undefined;
  let flush: ReturnType<typeof setTimeout> | undefined;
  let progressAt = 0;
  /** Aborts the stream being read. */
  let stream: AbortController | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delay = MIN_DELAY_MS;
  let closed = false;

  const connect = () => {
    if (closed) return;
    // Until SYNCED, the events describe a new listing.
    pending = new Map();
    next = undefined;
    clearTimeout(flush);
    const aborted = new AbortController();
    stream = aborted;
    const onData = (data: string) => {
      let event: WatchEvent;
      try {
        event = JSON.parse(data) as WatchEvent;
      } catch {
        return;
      }
      apply(event);
    };
    // Ended by the service (or the network) or refused: back off, then a fresh listing.
    const ended = () => {
      if (closed || stream !== aborted) return;
      stream = undefined;
      handlers.onConnection('reconnecting');
      timer = setTimeout(connect, delay);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    };
    readEventStream(apiUrl('servers?watch=1'), onData, aborted.signal).then(ended, ended);
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
      const now = performance.now();
      if (now - progressAt >= PROGRESS_MS) {
        progressAt = now;
        handlers.onProgress?.(pending.size);
      }
      return;
    }
    // A new map for each batch, so subscribers can compare by identity.
    if (!next) {
      next = new Map(current);
      flush = setTimeout(() => {
        if (!next) return;
        current = next;
        next = undefined;
        handlers.onServers(current);
      }, BATCH_MS);
    }
    if (event.type === 'DELETED') next.delete(record.id);
    else next.set(record.id, record);
  };

  handlers.onConnection('connecting');
  connect();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      clearTimeout(flush);
      stream?.abort();
    },
  };
}
