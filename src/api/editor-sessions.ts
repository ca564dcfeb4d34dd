// Editor WebSockets stay open for hours, and the proxy checks access only when one opens: these
// are the ones open now, by server, with who opened each, so that when someone loses access (a
// revoke, an edit of the manifest or of the config's policy) their open editor is closed too, not
// only their next request refused. Only upgrades are kept, so a request costs nothing here.
// They also tell when a person attaches to an editor (devcontainer.json's postAttachCommand): the
// first editor WebSocket of a server, or the first again once all of them had closed. A tab of
// code-server holds its WebSockets open while it is open, so this is "a tab was opened when none
// was", and neither a page's extra sockets nor a reload while another tab stays open count again.
// A forwarded port's WebSocket (a program's page, /vscode/{port}/proxy/{p}/) is no editor tab.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { EditorServer } from '../manifests/types.ts';
import { isForwardedPath } from '../proxy/forwarded-ports.ts';
import { parseRoute } from '../proxy/route.ts';
import type { Requester, ServerAccess } from './access.ts';

export class EditorSessions {
  readonly #access: Pick<ServerAccess, 'requester' | 'allows'>;
  readonly #serverNamed: (name: string) => EditorServer | undefined;
  readonly #byName = new Map<string, Map<Duplex, Requester>>();
  readonly #onAttach: ((name: string) => void) | undefined;
  /** Editor tabs' WebSockets open, by server (forwarded ports' left out): the first one is an attach. */
  readonly #tabs = new Map<string, number>();

  constructor(access: Pick<ServerAccess, 'requester' | 'allows'>, serverNamed: (name: string) => EditorServer | undefined, onAttach?: (name: string) => void) {
    this.#access = access;
    this.#serverNamed = serverNamed;
    this.#onAttach = onAttach;
  }

  /** A WebSocket upgrade to server `name`'s editor was let through for `req`: kept until its socket closes. */
  opened(name: string, req: IncomingMessage): void {
    const socket = req.socket;
    let sockets = this.#byName.get(name);
    if (!sockets) this.#byName.set(name, (sockets = new Map()));
    sockets.set(socket, this.#access.requester(req.headers));
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.#byName.get(name) === sockets) this.#byName.delete(name);
    });
    if (this.#onAttach) this.#countTab(name, req);
  }

  #countTab(name: string, req: IncomingMessage): void {
    const route = parseRoute(req);
    if (route && isForwardedPath(route)) return;
    const open = this.#tabs.get(name) ?? 0;
    this.#tabs.set(name, open + 1);
    req.socket.once('close', () => {
      const left = (this.#tabs.get(name) ?? 1) - 1;
      if (left > 0) this.#tabs.set(name, left);
      else this.#tabs.delete(name);
    });
    if (open === 0) this.#onAttach!(name);
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
