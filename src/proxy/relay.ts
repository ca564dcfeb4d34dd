// The two sockets of a WebSocket once the editor has accepted the upgrade: bytes relayed both ways
// as they arrive, not parsed as frames (the proxy has nothing to read in them), each chunk counted
// for the observer; either side's end is passed on, and its close or failure closes both.
import type { Socket } from 'node:net';
import type { ProxyObserver } from './editor-proxy.ts';

/**
 * Relays an upgraded connection both ways: each chunk written on as it arrives, the sender paused
 * while the receiver's buffer is full, Nagle off on both (small frames go out at once). `head` and
 * `editorHead` are what each side sent after its upgrade head, written on first.
 */
export function relay(client: Socket, editor: Socket, port: number, head: Buffer, editorHead: Buffer, observer: ProxyObserver | undefined): void {
  for (const socket of [client, editor]) {
    socket.setTimeout?.(0);
    socket.setNoDelay?.(true);
    socket.setKeepAlive?.(true, 0);
  }
  const pipeOneWay = (from: Socket, to: Socket, fromClient: boolean): void => {
    from.on('data', (chunk: Buffer) => {
      observer?.socketData(port, chunk.length, fromClient);
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => from.resume());
    from.on('end', () => to.end());
    from.resume(); // a 'data' listener alone does not restart a socket paused explicitly
  };
  const destroyBoth = (): void => {
    client.destroy();
    editor.destroy();
  };
  client.on('error', destroyBoth);
  editor.on('error', destroyBoth);
  client.once('close', destroyBoth);
  editor.once('close', destroyBoth);
  if (observer) {
    observer.socketOpened(port);
    client.once('close', () => observer.socketClosed(port));
  }
  if (editorHead.length > 0) {
    observer?.socketData(port, editorHead.length, false);
    client.write(editorHead);
  }
  if (head.length > 0) {
    observer?.socketData(port, head.length, true);
    editor.write(head);
  }
  pipeOneWay(client, editor, true);
  pipeOneWay(editor, client, false);
}
