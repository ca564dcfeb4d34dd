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
    ...(all.some((o) => o.socketMessage) ? {
      socketMessage: (port: number, fromClient: boolean) => {
        for (const o of all) o.socketMessage?.(port, fromClient);
      },
    } : {}),
  };
}

/**
 * An observer that marks the server on the port as used by what a person does (docs/idle.md):
 * each proxied HTTP request (a page load, a file fetched), and each WebSocket message that counts
 * (editor-frames.ts: the browser's input, the editor's output to an open tab). Opening, closing
 * and the rest of a socket's bytes (keep-alives, acknowledgements, a reconnect) are not use.
 */
export function activityObserver(touch: (port: number) => void): ProxyObserver {
  const nothing = (): void => {};
  return {
    request: (port) => touch(port),
    socketOpened: nothing,
    socketData: nothing,
    socketClosed: nothing,
    socketMessage: (port) => touch(port),
  };
}
