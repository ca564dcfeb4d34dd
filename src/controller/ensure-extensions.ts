// Step: the extensions the spec asks for (its own and its groups'), each installed once and
// recorded in status.extensions.
import { unknownExtensionGroups } from '../config/settings.ts';
import type { EditorServerStatus, ExtensionStatus } from '../manifests/types.ts';
import type { ServerRecord } from './cache.ts';
import type { ReconcileContext } from './context.ts';

/** Installs the extensions the spec asks for that status does not list yet; false if the file vanished. */
export async function ensureExtensions(ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus): Promise<boolean> {
  const { deps } = ctx;
  const server = record.server!;
  const groups = deps.config.extensionGroups;
  const unknown = unknownExtensionGroups(groups, server.spec.extensionGroups);
  const live = ctx.cache.live(record.name);
  if (unknown.length > 0 && JSON.stringify(unknown) !== JSON.stringify(live.unknownGroups)) {
    live.unknownGroups = unknown;
    deps.logs.event(record.name, 'WARN', `spec.extensionGroups names groups the config does not define: ${unknown.join(', ')}`);
  }
  const wanted = [...new Set([
    ...(server.spec.extensionGroups ?? []).flatMap((g) => (Object.hasOwn(groups, g) ? groups[g] : [])),
    ...(server.spec.extensions ?? []),
  ])];
  const known = new Map((status.extensions ?? []).map((e) => [e.id, e]));
  const missing = wanted.filter((id) => !known.has(id));
  if (missing.length === 0) {
    status.extensions = wanted.map((id) => known.get(id)!);
    if (status.extensions.length === 0) delete status.extensions;
    return true;
  }
  const name = record.name;
  const previousPhase = status.phase;
  status.phase = 'Provisioning';
  status.reason = 'InstallingExtensions';
  if ((await ctx.commit(record, uid, status)) === 'gone') return false;
  const target = { name, ...deps.layout.editor(name) };
  for (const id of missing) {
    deps.logs.event(name, 'INFO', `installing extension ${id}`);
    const outcome = await deps.installer.install(target, id);
    const entry: ExtensionStatus = outcome.ok
      ? { id, state: 'Installed', ...(outcome.version ? { version: outcome.version } : {}) }
      : { id, state: 'Failed', message: outcome.message };
    known.set(id, entry);
    deps.logs.event(name, outcome.ok ? 'INFO' : 'WARN', outcome.ok
      ? `extension ${id} installed${outcome.version ? ` (${outcome.version})` : ''}`
      : `extension ${id} failed to install: ${outcome.message}`);
  }
  status.extensions = wanted.map((id) => known.get(id)!);
  status.phase = previousPhase;
  status.reason = undefined;
  return true;
}
