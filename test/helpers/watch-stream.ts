// A client of GET /servers?watch=1 for tests: reads the event stream with http.get and parses
// each server-sent event itself, so tests check the bytes the service sends.
import { get, type IncomingHttpHeaders } from 'node:http';
import { eventually } from './wait.ts';

export interface WatchEvent {
  id: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'SYNCED';
  object: any;
}

export interface WatchStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every event received so far, in order. */
  events: WatchEvent[];
  /** Comment lines (`: ping`) received so far. */
  comments: string[];
  /** Every message as sent, for checks of the framing. */
  raw: string[];
  /** Lines that are not SSE as the contract has it (a test expects none). */
  problems: string[];
  /** True once the service ended the stream. */
  ended: boolean;
  /** The first event after the `from`-th matching `match`, waited for (10 s unless given). */
  next(match: (event: WatchEvent) => boolean, from?: number, timeoutMs?: number): Promise<WatchEvent>;
  close(): void;
}

/** Opens a watch stream with these headers and resolves once its response head is in. */
export function openWatch(baseUrl: string, headers: Record<string, string> = {}, query = 'watch=1'): Promise<WatchStream> {
  return new Promise((resolve, reject) => {
    const req = get(`${baseUrl}/servers?${query}`, { headers, agent: false }, (res) => {
      const stream: WatchStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        comments: [],
        raw: [],
        problems: [],
        ended: false,
        next: (match, from = 0, timeoutMs = 10_000) =>
          eventually(() => stream.events.slice(from).find(match), timeoutMs, 10),
        close: () => req.destroy(),
      };
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          stream.raw.push(message);
          parse(stream, message);
        }
      });
      const ended = () => {
        stream.ended = true;
      };
      res.on('end', ended);
      res.on('close', ended);
      res.on('error', ended);
      resolve(stream);
    });
    req.on('error', reject);
  });
}

function parse(stream: WatchStream, message: string): void {
  let id: number | undefined;
  let data: string | undefined;
  for (const line of message.split('\n')) {
    if (line.startsWith(':')) stream.comments.push(line);
    else if (line.startsWith('id: ')) id = Number(line.slice(4));
    else if (line.startsWith('data: ')) data = line.slice(6);
    else stream.problems.push(`unexpected line: ${JSON.stringify(line.slice(0, 200))}`);
  }
  if (data === undefined) {
    if (id !== undefined) stream.problems.push(`an id without data: ${message.slice(0, 200)}`);
    return;
  }
  const { type, object, ...rest } = JSON.parse(data);
  if (Object.keys(rest).length > 0) stream.problems.push(`extra members in data: ${Object.keys(rest).join(', ')}`);
  stream.events.push({ id: id ?? Number.NaN, type, object });
}
