// GET /servers?watch=1: the server list, then its changes, as server-sent events, the way a
// Kubernetes list-then-watch works: one ADDED per server, SYNCED, then ADDED, MODIFIED and
// DELETED as they happen. Records come serialised from the ServerFeed, once per change for all
// streams. The list is written in chunks of about LIST_CHUNK_BYTES, each once the one before has
// gone to the socket, so a new stream of 10,000 servers costs the service one chunk at a time, not
// the whole list at once; changes made meanwhile are held (the latest per server) and follow
// SYNCED. Each stream sees only the servers its requester may (the access policy); a client that
// stops reading is dropped rather than buffered without end.
import type { Request, Response, Router } from 'express';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { apiError } from '../../core/error-catalogue.ts';
import type { Requester, ServerAccess } from '../access.ts';
import { LentBuffer } from '../lent-buffer.ts';
import { recordsAsBytes, type FeedChange, type FeedEntry, type ServerFeed } from '../server-feed.ts';

/** About how many bytes of records one write of a new stream's list holds (one record when it is larger). */
export const LIST_CHUNK_BYTES = 64 * 1024;

export interface WatchLimits {
  /** Streams open at once; one more is answered 503. */
  maxWatchers: number;
  /** Bytes a stream may have waiting to be sent (beyond what the kernel holds) before it is dropped. */
  maxBufferedBytes: number;
  /** How often a `: ping` comment keeps proxies from closing an idle stream. */
  pingMs: number;
}

export const WATCH_LIMITS: WatchLimits = { maxWatchers: 200, maxBufferedBytes: 1024 * 1024, pingMs: 15_000 };

interface Watcher {
  res: ServerResponse;
  who: Requester;
  /** Ids of the records this stream has been sent, by server name: what it believes exists. */
  sent: Map<string, string>;
  lastId: number;
  /**
   * While the list is still being written: the changes since it was taken, one per server (its
   * first `before`, its latest `after`), and the bytes of their records.
   */
  held?: { changes: Map<string, FeedChange>; bytes: number };
}

/** Every open watch stream: fed by the ServerFeed, pinged, bounded, and ended when the service closes. */
export class WatchStreams {
  readonly #feed: ServerFeed;
  readonly #access: ServerAccess;
  readonly #limits: WatchLimits;
  readonly #log: (message: string) => void;
  readonly #watchers = new Set<Watcher>();
  /** While a stream is open: the feed's subscription and the pings (with none, a change or a stats sample costs nothing here). */
  #attached: { unsubscribe: () => void; ping: NodeJS.Timeout } | undefined;
  /** What new streams' lists are assembled in. */
  readonly #lent = new LentBuffer();
  #dropped = 0;
  #closed = false;

  constructor(options: { feed: ServerFeed; access: ServerAccess; limits?: Partial<WatchLimits>; log: (message: string) => void }) {
    this.#feed = options.feed;
    this.#access = options.access;
    this.#limits = { ...WATCH_LIMITS, ...options.limits };
    this.#log = options.log;
  }

  /** Follows the feed and pings, from the first stream opened; once the last is gone, neither. */
  #add(watcher: Watcher): void {
    this.#watchers.add(watcher);
    if (this.#attached || this.#closed) return;
    const unsubscribe = this.#feed.subscribe((change) => {
      for (const each of this.#watchers) this.#deliver(each, change);
    });
    // One timer for every stream (one still receiving its list is not idle).
    const ping = setInterval(() => {
      for (const each of this.#watchers) if (!each.held) this.#write(each, ': ping\n\n');
    }, this.#limits.pingMs);
    ping.unref();
    this.#attached = { unsubscribe, ping };
  }

  #remove(watcher: Watcher): void {
    this.#watchers.delete(watcher);
    if (this.#watchers.size > 0 || !this.#attached) return;
    this.#attached.unsubscribe();
    clearInterval(this.#attached.ping);
    this.#attached = undefined;
  }

  /** For GET /health: streams open now, and those dropped for not reading. */
  get state(): { watchers: number; max_watchers: number; dropped_slow: number } {
    return { watchers: this.#watchers.size, max_watchers: this.#limits.maxWatchers, dropped_slow: this.#dropped };
  }

  /** Whether open() would take a stream now (not closing, a stream left): GET /servers' fast path asks first. */
  get accepting(): boolean {
    return !this.#closed && this.#watchers.size < this.#limits.maxWatchers;
  }

  /**
   * Answers a watch request: the event-stream headers, the list, SYNCED, then changes until either
   * side ends it. Takes express's response or Node's (the fast path before express).
   */
  open(req: { headers: IncomingHttpHeaders; socket: { remoteAddress?: string } }, res: ServerResponse): void {
    if (this.#closed) throw apiError('SHUTTING_DOWN');
    if (this.#watchers.size >= this.#limits.maxWatchers) {
      throw apiError('TOO_MANY_WATCHERS', { max: this.#limits.maxWatchers });
    }
    const watcher: Watcher = { res, who: this.#access.requester(req.headers), sent: new Map(), lastId: 0 };
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Accel-Buffering', 'no');
    res.socket?.setNoDelay(true);
    // The list is taken in the same tick as the subscription, so no change falls in between.
    const entries: FeedEntry[] = [];
    for (const entry of this.#feed.snapshot()) {
      if (!this.#access.allows(watcher.who, entry.server)) continue;
      watcher.sent.set(entry.name, entry.id);
      entries.push(entry);
    }
    watcher.held = { changes: new Map(), bytes: 0 };
    this.#add(watcher);
    res.on('close', () => this.#remove(watcher));
    // The first chunk goes in the same write as the headers: one chunk on the wire for a small list.
    this.#writeList(watcher, entries, 0);
    if (res.destroyed) this.#remove(watcher);
  }

  /**
   * ADDED for entries[from…] (ids from+1…), as many as fit in a chunk; SYNCED after the last one.
   * The next chunk is written once this one has gone to the socket.
   */
  #writeList(watcher: Watcher, entries: FeedEntry[], from: number): void {
    const { res } = watcher;
    if (res.destroyed || res.writableEnded) return;
    let to = from;
    for (let bytes = 0; to < entries.length; to++) {
      const entry = entries[to];
      bytes += entry.bytes.prefix.length + entry.bytes.suffix.length + 64;
      if (bytes > LIST_CHUNK_BYTES && to > from) break;
    }
    const last = to === entries.length;
    const frame = {
      open: '',
      before: (i: number) => `id: ${from + i + 1}\ndata: {"type":"ADDED","object":`,
      after: '}\n\n',
      close: last ? `id: ${entries.length + 1}\ndata: {"type":"SYNCED","object":null}\n\n` : '',
    };
    const { bytes, release } = this.#lent.assemble((alloc) => recordsAsBytes(entries.slice(from, to), frame, alloc));
    // Lent until this write is done, or the stream is gone (its socket writes nothing more).
    res.once('close', release);
    res.write(bytes, (error) => {
      res.off('close', release);
      release();
      // After a turn of the event loop, so a long list does not hold up other requests.
      if (!error && !last) setImmediate(() => this.#writeList(watcher, entries, to));
    });
    if (!last) return;
    // The list is out: what changed meanwhile follows SYNCED.
    const held = watcher.held!;
    watcher.held = undefined;
    watcher.lastId = entries.length + 1;
    for (const change of held.changes.values()) this.#deliver(watcher, change);
  }

  /** Ends every stream (the service is closing); later requests get 503. */
  close(): void {
    this.#closed = true;
    for (const watcher of this.#watchers) watcher.res.end();
    this.#watchers.clear();
    this.#attached?.unsubscribe();
    clearInterval(this.#attached?.ping);
    this.#attached = undefined;
  }

  /** One change as this stream sees it: a server it may no longer see (or whose id changed) is DELETED for it. */
  #deliver(watcher: Watcher, change: FeedChange): void {
    if (watcher.held) return this.#hold(watcher, change);
    const { name, before, after } = change;
    const visible = after !== undefined && this.#access.allows(watcher.who, after.server);
    const sentId = watcher.sent.get(name);
    if (sentId !== undefined && (!visible || sentId !== after!.id)) {
      watcher.sent.delete(name);
      if (before) this.#send(watcher, 'DELETED', before.json);
    }
    if (!visible) return;
    const type = watcher.sent.has(name) ? 'MODIFIED' : 'ADDED';
    watcher.sent.set(name, after.id);
    this.#send(watcher, type, after.json);
  }

  /** A change while the list is written: kept, merged with the server's earlier one, until SYNCED is out. */
  #hold(watcher: Watcher, change: FeedChange): void {
    const held = watcher.held!;
    const earlier = held.changes.get(change.name);
    held.bytes += (change.after?.json.length ?? 0) - (earlier?.after?.json.length ?? 0);
    held.changes.set(change.name, { name: change.name, before: earlier ? earlier.before : change.before, after: change.after });
    // What waits for this stream: the changes held and the chunk not yet taken by the socket.
    if (held.bytes + watcher.res.writableLength > this.#limits.maxBufferedBytes) this.#drop(watcher, held.bytes + watcher.res.writableLength);
  }

  #send(watcher: Watcher, type: string, object: string): void {
    this.#write(watcher, this.#event(watcher, type, object));
  }

  #event(watcher: Watcher, type: string, object: string): string {
    return `id: ${++watcher.lastId}\ndata: {"type":"${type}","object":${object}}\n\n`;
  }

  #write(watcher: Watcher, text: string): void {
    const { res } = watcher;
    if (res.destroyed || res.writableEnded) return;
    // Node buffers whatever the socket does not take: a client that stops reading would hold it all.
    if (res.writableLength > this.#limits.maxBufferedBytes) return this.#drop(watcher, res.writableLength);
    res.write(text);
  }

  #drop(watcher: Watcher, waiting: number): void {
    const { res } = watcher;
    this.#dropped++;
    this.#remove(watcher);
    this.#log(`watch stream of ${res.req.socket.remoteAddress ?? 'a client'} dropped: it read nothing while ${Math.round(waiting / 1024)} KiB waited (more than ${Math.round(this.#limits.maxBufferedBytes / 1024)} KiB); it may connect again`);
    res.destroy();
  }
}

/** GET /servers?watch=1, ahead of the plain listing (watch absent or 0), which it hands on to. */
export function watchRoutes(streams: WatchStreams, router: Router): void {
  router.get('/servers', (req: Request, res: Response, next) => {
    const watch = req.query.watch;
    if (watch === undefined || watch === '0') return next();
    if (watch !== '1') {
      throw apiError('INVALID_QUERY', { watch: Array.isArray(watch) ? watch.join(',') : String(watch) });
    }
    streams.open(req, res);
  });
}
