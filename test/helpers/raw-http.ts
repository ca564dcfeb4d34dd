// Raw HTTP over a TCP socket, for requests no well-behaved client would send (bad request lines,
// missing Host, odd versions), where fetch and http.request would refuse or repair them.
import { connect } from 'node:net';

export interface RawAnswer {
  /** Everything the service sent before it closed the socket or the wait ended. */
  text: string;
  /** The status code of the first response line, or undefined when none came. */
  status?: number;
  /** The JSON body of the first response, when it has one. */
  body?: any;
}

/**
 * Sends `request` as given and collects the answer until the service closes the socket, or for
 * at most `timeoutMs` (a keep-alive or upgraded connection stays open: the first answer is enough
 * then, so the socket is closed once a whole response head and its announced body are in).
 */
export function rawRequest(port: number, request: string | Buffer, timeoutMs = 5000, endAfterWrite = false): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1');
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parseAnswer(Buffer.concat(chunks).toString('latin1')));
    };
    const timer = setTimeout(finish, timeoutMs);
    // endAfterWrite: a client that sends nothing more (half-close), rather than one that waits.
    socket.on('connect', () => (endAfterWrite ? socket.end(request) : socket.write(request)));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      if (completeResponse(Buffer.concat(chunks).toString('latin1'))) finish();
    });
    socket.on('error', finish);
    socket.on('close', finish);
  });
}

function completeResponse(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = text.slice(0, end);
  if (/^HTTP\/1\.1 101/.test(head)) return true;
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) return text.endsWith('\r\n0\r\n\r\n');
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  return length !== null && text.length - end - 4 >= Number(length[1]);
}

function parseAnswer(text: string): RawAnswer {
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  const end = text.indexOf('\r\n\r\n');
  let body: unknown;
  if (end >= 0) {
    // Only the first response's body: a pipelined rest of the request may have got a second one.
    const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
    const raw = text.slice(end + 4, length ? end + 4 + Number(length[1]) : undefined);
    try {
      body = JSON.parse(Buffer.from(raw, 'latin1').toString('utf8'));
    } catch {
      // not JSON
    }
  }
  return { text, status: status ? Number(status[1]) : undefined, body };
}
