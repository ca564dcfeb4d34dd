// What the controller learns at start-up, before its first reconcile: the uids kept before, every
// valid manifest (its uid and port claimed before anyone allocates), and the editors already
// running (taken over, not restarted). Called by the Controller's start in that order.
import type { EditorServer } from '../manifests/types.ts';
import { describeRef, type EditorEndpoint, type RuntimeRef } from '../runtime/interface.ts';
import type { ReconcileContext } from './context.ts';
import { inheritedStatus } from './ensure-identity.ts';
import { adoptEditor } from './ensure-process.ts';

/** Reads the uids kept before (status records, older uid files); call before the first prime or reconcile. */
export async function loadIdentities(ctx: Pick<ReconcileContext, 'deps' | 'identities'>): Promise<void> {
  await ctx.identities.load(await ctx.deps.store.recordedUids());
}

/**
 * Remembers a valid manifest read at start-up, gives it its uid and holds its port before
 * anyone allocates. A status copied from another server holds nothing.
 */
export function prime(ctx: Pick<ReconcileContext, 'deps' | 'identities' | 'table' | 'presence'>, server: EditorServer, folder?: string): void {
  const name = server.metadata.name;
  const resolved = ctx.identities.resolve(name, server.metadata.uid);
  if (inheritedStatus(ctx.deps.layout, name, server, resolved) !== undefined) delete server.status;
  server.metadata.uid = resolved.uid;
  ctx.table.setRecord({ name, server });
  if (folder !== undefined) ctx.presence.of(name).seenIn = folder;
  const port = server.spec.port ?? server.status?.port;
  if (port !== undefined) ctx.deps.ports.reserve(name, port);
}

/**
 * Takes over an editor found at start-up whose manifest is missing: like a file that just
 * went, it is stopped after the grace period unless the file appears. Its port stays held.
 */
export function adoptOrphan(
  ctx: ReconcileContext, name: string, ref: RuntimeRef, endpoint: EditorEndpoint | undefined, port: number | undefined, folder: string | undefined,
): void {
  adoptEditor(ctx, name, ref, endpoint);
  const presence = ctx.presence.of(name);
  presence.seenIn = folder;
  presence.missingSince = Date.now();
  if (port !== undefined) ctx.deps.ports.reserve(name, port);
  ctx.log(`editor ${name} (${describeRef(ref)}) has no manifest: it is stopped in ${ctx.deps.config.controller.orphanGraceSeconds} s unless ${ctx.deps.store.fileOf(name)} appears; its files are kept`);
}
