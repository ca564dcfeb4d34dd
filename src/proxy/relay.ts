// The two sockets of a WebSocket once the editor has accepted the upgrade: bytes relayed both ways
// as they arrive, each chunk counted for the observer and, when it asks, read on the way for the
// messages that count as someone using the editor (editor-frames.ts: frame and message headers
// only, nothing copied); either side's end is passed on, and its close or failure closes both.
import type { Socket } from 'node:net';
import type { ProxyObserver } from './editor-proxy.ts';
import { EditorFrameReader, type SocketProtocol } from './editor-frames.ts';

/**
 * Relays an upgraded connection both ways: each chunk written on as it arrives, the sender paused
 * while the receiver's buffer is full, Nagle off on both (small frames go out at once). `head` and
 * `editorHead` are what each side sent after its upgrade head, written on first.
 */
export function relay(
  client: Socket, editor: Socket, port: number, head: Buffer, editorHead: Buffer, observer: ProxyObserver | undefined, protocol: SocketProtocol,
): void {
  const readers = observer?.socketMessage ? [new EditorFrameReader(protocol, true), new EditorFrameReader(protocol, false)] : undefined;
  const observe = (chunk: Buffer, fromClient: boolean): void => {
    observer!.socketData(port, chunk.length, fromClient);
    if (readers?.[fromClient ? 0 : 1].accept(chunk)) observer!.socketMessage!(port, fromClient);
  };
  for (const socket of [client, editor]) {
    socket.setTimeout?.(0);
    socket.setNoDelay?.(true);
    socket.setKeepAlive?.(true, 0);
  }
  const pipeOneWay = (from: Socket, to: Socket, fromClient: boolean): void => {
    from.on('data', (chunk: Buffer) => {
      if (observer) observe(chunk, fromClient);
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
    if (observer) observe(editorHead, false);
    client.write(editorHead);
  }
  if (head.length > 0) {
    if (observer) observe(head, true);
    editor.write(head);
  }
  pipeOneWay(client, editor, true);
  pipeOneWay(editor, client, false);
}
