// GET /servers/{id}/ports: a server's forwarded ports, each with the address it answers at through
// the proxy (`/vscode/{port}/proxy/{p}/`, src/proxy/forwarded-ports.ts). The ports its
// devcontainer.json declares (forwardPorts, with portsAttributes), and, where the runtime can tell
// (local processes), those its programs listen on now; on a cluster, whether each declared one
// accepts a connection at the Pod's address. Read as the server's other reads are: an
// id the requester may not see is 404.
import { Router } from 'express';
import type { ForwardedPort } from '../../devcontainer/types.ts';
import type { EditorEndpoint } from '../../runtime/interface.ts';
import { forwardedUrl } from '../../proxy/index.ts';
import { findServer, type ServersDeps } from './context.ts';

export interface PortsRouteDeps extends Pick<ServersDeps, 'index' | 'access'> {
  /** The ports of server `name`'s running editor that listen now: all of them where the runtime can tell, else which of `declared` do. */
  listeningPorts: (name: string, endpoint: EditorEndpoint, declared: readonly number[]) => Promise<number[]>;
  /** The service's own port, never listed. */
  servicePort: () => number;
}

/** One port as GET /servers/{id}/ports lists it. */
export interface PortView {
  port: number;
  /** portsAttributes' label, else null. */
  label: string | null;
  protocol: 'http' | 'https';
  /** portsAttributes' onAutoForward, else the reference's default, `notify`. */
  onAutoForward: string;
  /** In devcontainer.json's forwardPorts. */
  declared: boolean;
  /** A program of the server listens on it now (on a cluster, where only declared ports are looked at: it accepts a connection at the Pod's address). */
  listening: boolean;
  /** Where it answers through the proxy. */
  url: string;
}

export function portsRouter(deps: PortsRouteDeps): Router {
  const router = Router();
  router.get('/servers/:id/ports', async (req, res) => {
    const record = findServer(deps, req);
    const server = record.server!;
    const editorPort = server.spec.port ?? server.status?.port;
    const declared = server.status?.devcontainer?.plan?.forwardPorts ?? [];
    const endpoint = deps.index.endpointOf(record.name);
    // Only a running editor's programs are looked for; never the editor's own port, nor the service's.
    const own = new Set([editorPort, endpoint?.port, deps.servicePort()]);
    const found = endpoint ? await deps.listeningPorts(record.name, endpoint, declared.map((p) => p.port)) : [];
    const listening = new Set(found.filter((p) => !own.has(p)));
    res.json(portViews(editorPort, declared, listening));
  });
  return router;
}

/** The declared ports in the file's order, then the others listening, by number. */
export function portViews(editorPort: number | undefined, declared: readonly ForwardedPort[], listening: ReadonlySet<number>): PortView[] {
  const url = (port: number) => (editorPort === undefined ? '' : forwardedUrl(editorPort, port));
  const views: PortView[] = declared.map((p) => ({
    port: p.port,
    label: p.label ?? null,
    protocol: p.protocol ?? 'http',
    onAutoForward: p.onAutoForward ?? 'notify',
    declared: true,
    listening: listening.has(p.port),
    url: url(p.port),
  }));
  const seen = new Set(declared.map((p) => p.port));
  for (const port of [...listening].sort((a, b) => a - b)) {
    if (!seen.has(port)) views.push({ port, label: null, protocol: 'http', onAutoForward: 'notify', declared: false, listening: true, url: url(port) });
  }
  return views;
}
