// GET /servers, GET /servers/{id} and GET /servers?watch=1 answered before express, from the
// ServerFeed's cached JSON. These reads are what dashboards and scripts poll; express's
// per-request set-up (its request and response prototypes, the router walking every layer,
// res.send's checks) costs more than the answer itself. Only the plain form of each is taken here:
// exactly `GET /servers` without a query, `GET /servers?watch=1`, and `GET /servers/{id}` with an
// id of the characters a uid has, for a server the requester may see. Everything else (HEAD, other
// queries, another spelling of the path, an unknown or hidden id, a watch refused with 503) goes
// on to express, which answers it as before, errors included. The bytes and headers are the ones
// express sends for the same request (test/api/fast-reads.test.ts and the watch tests compare them).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerIndex } from '../index/server-index.ts';
import type { ServerAccess } from './access.ts';
import type { ApiCors } from './cors.ts';
import type { WatchStreams } from './routes/watch.ts';
import { LentBuffer } from './lent-buffer.ts';
import { ServerFeed } from './server-feed.ts';

/** What express's res.send sets for a string body with this Content-Type, after the CORS middleware. */
const JSON_TYPE = 'application/json; charset=utf-8';
const PREFIX = '/servers/';
const WATCH = '/servers?watch=1';
/** The characters of a uid (a UUID, or what a hand-written manifest's status gave it), within bounds. */
const ID = /^[A-Za-z0-9._~-]{1,128}$/;

export interface FastReadsDeps {
  feed: ServerFeed;
  index: Pick<ServerIndex, 'nameOfUid' | 'records'>;
  access: Pick<ServerAccess, 'filterFor' | 'sees'>;
  /** GET /servers?watch=1 exactly is opened here too while the streams take one (else express answers the 503). */
  watch?: Pick<WatchStreams, 'accepting' | 'open'>;
  /** The API's CORS headers for each answer. */
  cors: Pick<ApiCors, 'headersFor'>;
  /** Told of each answered request with the route pattern express would have matched (the API's timing). */
  answered?: (req: IncomingMessage, res: ServerResponse, route: string) => void;
}

/** Returns a handler that answers the plain reads and returns true, or returns false without touching the request. */
export function fastReads(deps: FastReadsDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { feed, index, access } = deps;
  const send = (req: IncomingMessage, res: ServerResponse, route: string, body: string | Buffer | { chunks: Uint8Array[]; length: number }) => {
    deps.answered?.(req, res, route);
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    const cors = deps.cors.headersFor(req);
    res.writeHead(200, cors.length === 0 ? ['Content-Type', JSON_TYPE, 'Content-Length', String(length)] : [...cors, 'Content-Type', JSON_TYPE, 'Content-Length', String(length)]);
    if (typeof body === 'string' || Buffer.isBuffer(body)) {
      res.end(body);
      return true;
    }
    // The whole list's pieces go to the socket together (one writev), with nothing copied first.
    res.cork();
    for (const chunk of body.chunks) res.write(chunk);
    res.end();
    res.uncork();
    return true;
  };
  // One buffer reused by list answers one after another (src/api/lent-buffer.ts), taken by one
  // allocation function made once (the list is assembled synchronously: `loan` is that answer's).
  const lent = new LentBuffer();
  type Loan = ReturnType<LentBuffer['take']>;
  let loan: Loan | undefined;
  const alloc = (length: number) => (loan = lent.take(length)).bytes;
  return (req, res) => {
    if (req.method !== 'GET') return false;
    const url = req.url ?? '';
    if (url === '/servers') {
      loan = undefined;
      const sees = access.filterFor(req);
      const bytes = sees ? feed.listBytes(sees, alloc) : feed.listChunks(alloc);
      const taken = loan as Loan | undefined;
      loan = undefined;
      // Written once the response is done, or never once its connection is gone.
      if (taken) res.once('close', taken.release);
      return send(req, res, '/servers', bytes);
    }
    if (url === WATCH && deps.watch?.accepting) {
      const cors = deps.cors.headersFor(req);
      for (let i = 0; i < cors.length; i += 2) res.setHeader(cors[i], cors[i + 1]);
      deps.watch.open(req, res);
      return true;
    }
    if (!url.startsWith(PREFIX)) return false;
    const id = url.slice(PREFIX.length);
    if (!ID.test(id)) return false;
    const name = index.nameOfUid(id);
    const record = name === undefined ? undefined : index.records.get(name);
    if (!record?.server || !access.sees(req, record.server)) return false;
    const entry = feed.entryOf(record.name);
    if (!entry) return false;
    return send(req, res, '/servers/:id', ServerFeed.current(entry));
  };
}
