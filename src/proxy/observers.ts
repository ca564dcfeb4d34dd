// Several parts read the proxy's traffic (idle tracking, metrics): one observer that tells each.
import type { ProxyObserver } from './editor-proxy.ts';

/** An observer telling every one given, in order; undefined when none is given (the proxy then does no counting at all). */
export function fanOut(observers: Array<ProxyObserver | undefined>): ProxyObserver | undefined {
  const all = observers.filter((o): o is ProxyObserver => o !== undefined);
  if (all.length <= 1) return all[0];
  return {
    request: (port, status, bytesIn, bytesOut) => {
      for (const o of all) o.request(port, status, bytesIn, bytesOut);
    },
    socketOpened: (port) => {
      for (const o of all) o.socketOpened(port);
    },
    socketData: (port, bytes, fromClient) => {
      for (const o of all) o.socketData(port, bytes, fromClient);
    },
    socketClosed: (port) => {
      for (const o of all) o.socketClosed(port);
    },
  };
}

/** An observer that marks the server on the port as used by each request and each WebSocket chunk. */
export function activityObserver(touch: (port: number) => void): ProxyObserver {
  return {
    request: (port) => touch(port),
    socketOpened: (port) => touch(port),
    socketData: (port) => touch(port),
    socketClosed: (port) => touch(port),
  };
}
