// Editor WebSockets stay open for hours, and the proxy checks access only when one opens: these
// are the ones open now, by server, with who opened each, so that when someone loses access (a
// revoke, an edit of the manifest or of the config's policy) their open editor is closed too, not
// only their next request refused. Only upgrades are kept, so a request costs nothing here.
// They also tell when a person attaches to an editor (devcontainer.json's postAttachCommand): the
// first editor WebSocket of a server, or the first again once all of them had closed. A tab of
// code-server holds its WebSockets open while it is open, so this is "a tab was opened when none
// was", and neither a page's extra sockets nor a reload while another tab stays open count again.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { EditorServer } from '../manifests/types.ts';
import type { Requester, ServerAccess } from './access.ts';

export class EditorSessions {
  readonly #access: Pick<ServerAccess, 'requester' | 'allows'>;
  readonly #serverNamed: (name: string) => EditorServer | undefined;
  readonly #byName = new Map<string, Map<Duplex, Requester>>();
  readonly #onAttach: ((name: string) => void) | undefined;

  constructor(access: Pick<ServerAccess, 'requester' | 'allows'>, serverNamed: (name: string) => EditorServer | undefined, onAttach?: (name: string) => void) {
    this.#access = access;
    this.#serverNamed = serverNamed;
    this.#onAttach = onAttach;
  }

  /** A WebSocket upgrade to server `name`'s editor was let through for `req`: kept until its socket closes. */
  opened(name: string, req: IncomingMessage): void {
    const socket = req.socket;
    let sockets = this.#byName.get(name);
    if (!sockets) {
      this.#byName.set(name, (sockets = new Map()));
      this.#onAttach?.(name);
    }
    sockets.set(socket, this.#access.requester(req.headers));
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.#byName.get(name) === sockets) this.#byName.delete(name);
    });
  }

  /** Server `name` changed (its manifest, or it went): closes the editors of those who may no longer reach it. */
  recheck(name: string): void {
    const sockets = this.#byName.get(name);
    if (!sockets) return;
    const server = this.#serverNamed(name);
    for (const [socket, who] of sockets) if (!this.#access.allows(who, server)) socket.destroy();
  }

  /** The policy changed (the config file): every open editor is checked again. */
  recheckAll(): void {
    for (const name of [...this.#byName.keys()]) this.recheck(name);
  }
}
