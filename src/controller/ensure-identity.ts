// Step: the server's uid, and whether its status is its own. A copied manifest keeps neither
// the uid nor the status of the server it was copied from.
import { dirname } from 'node:path';
import type { EditorServer } from '../manifests/types.ts';
import type { DataLayout } from '../workspace/layout.ts';
import type { ResolvedUid, ServerIdentities } from './identity.ts';

/** Why the manifest's status belongs to another server (a copy of its file), or undefined. */
export function inheritedStatus(layout: DataLayout, name: string, server: EditorServer, resolved: ResolvedUid): string | undefined {
  if (resolved.holder !== undefined && resolved.holder !== name) {
    return `metadata.uid ${resolved.refused} belongs to server "${resolved.holder}" (is this file a copy of its manifest?): this server gets a uid of its own, ${resolved.uid}, and its own port and editor`;
  }
  // Only a workspace in this service's data folder names a server: a cluster's editor has the same
  // path (its Pod's /data/workspace) in every server's own volume, which says nothing of whose it is.
  const workspace = server.status?.workspacePath;
  if (workspace !== undefined && isAnothersWorkspace(layout, name, workspace)) {
    return `status names the workspace ${workspace}, not this server's (is this file a copy of another manifest?): its status is started afresh, with a port and editor of its own`;
  }
  return undefined;
}

/**
 * True when `workspace` is another server's folder in this data folder. A path of no folder here
 * says nothing about whose it is: a cluster runtime's workspace is the same path (`/data/workspace`)
 * in every server's own volume.
 */
function isAnothersWorkspace(layout: DataLayout, name: string, workspace: string): boolean {
  const own = layout.workspace(name);
  return workspace !== own && dirname(workspace) === dirname(own);
}

/**
 * Gives the manifest its name's uid (kept from before, else the manifest's unless another server
 * has it) and drops a status copied from another server. Returns what to warn about, if anything.
 */
export function ensureIdentity(
  identities: ServerIdentities, layout: DataLayout, name: string, server: EditorServer,
): { uid: string; warning?: string; inherited: boolean } {
  const resolved = identities.resolve(name, server.metadata.uid);
  const inherited = inheritedStatus(layout, name, server, resolved);
  server.metadata.uid = resolved.uid;
  // A status copied from another server says nothing about this one: it starts afresh.
  if (inherited) delete server.status;
  const warning = inherited
    ?? (resolved.refused !== undefined ? `metadata.uid ${resolved.refused} is not this server's uid: it keeps its uid ${resolved.uid}` : undefined);
  return { uid: resolved.uid, warning, inherited: inherited !== undefined };
}
