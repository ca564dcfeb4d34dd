// Small network helpers for the tests and the benchmarks (bench/ imports them too): a free port
// and a WebSocket that has opened.
import { createServer } from 'node:net';
import type { WebSocket } from 'ws';

/** A port on which nothing listens: bound once on 127.0.0.1 to get it, then closed. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves with the socket once it is open; rejects if it fails first. */
export function opened(socket: WebSocket): Promise<WebSocket> {
  return new Promise((resolve, reject) => socket.once('open', () => resolve(socket)).once('error', reject));
}
