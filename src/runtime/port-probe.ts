// Whether a port on loopback is free: what the process runtime's editors bind.
import { createServer } from 'node:net';

/** The address editors of the process runtime bind: loopback only, the proxy is the way in. */
export const EDITOR_HOST = '127.0.0.1';

/** True when nothing listens on 127.0.0.1:port (we can bind it ourselves). */
export const portIsFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: EDITOR_HOST, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
