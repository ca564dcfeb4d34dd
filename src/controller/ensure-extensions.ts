// Step: the extensions the spec asks for (its own and its groups'), each installed once and
// recorded in status.extensions. Installs run as an operation outside the worker (they may take
// minutes); a spec that wants other extensions cancels the one under way, killing its installer.
import { unknownExtensionGroups } from '../config/settings.ts';
import type { EditorServerStatus, ExtensionStatus } from '../manifests/types.ts';
import type { ServerRecord } from './cache.ts';
import { setCondition } from './conditions.ts';
import type { ReconcileContext } from './context.ts';
import type { Operation } from './operations.ts';

const KIND = 'extension installs';
type Installed = Map<string, ExtensionStatus>;

/**
 * 'ready' once every wanted extension has an outcome in status; 'gone' if the file vanished;
 * else the operation to wait for (status says Provisioning, InstallingExtensions, and how far).
 */
export async function ensureExtensions(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<'ready' | 'gone' | { waitFor: Promise<unknown> }> {
  const { deps, operations } = ctx;
  const name = record.name;
  const wanted = wantedExtensions(ctx, record);
  const key = JSON.stringify(wanted);
  const known = new Map((status.extensions ?? []).map((e) => [e.id, e]));
  let op = operations.get<Installed>(name, KIND);
  if (op && !op.settled && op.key !== key) {
    // The spec wants other extensions now: what was installed is kept, the rest starts over.
    await operations.cancel(name, 'the spec changed');
  }
  // Installs that finished count, whatever happened to the operation afterwards.
  for (const [id, entry] of op?.data ?? []) if (wanted.includes(id)) known.set(id, entry);
  if (op && !op.settled && op.key === key) return installing(ctx, record, uid, status, wanted, known, op);
  if (op?.settled) operations.drop(name);

  const missing = wanted.filter((id) => !known.has(id));
  if (missing.length === 0) {
    status.extensions = wanted.map((id) => known.get(id)!);
    if (status.extensions.length === 0) delete status.extensions;
    if (status.reason === 'InstallingExtensions') Object.assign(status, { reason: undefined, message: undefined });
    if (status.conditions?.some((c) => c.type === 'ExtensionsInstalled') || wanted.length > 0) {
      const failed = status.extensions?.filter((e) => e.state === 'Failed').map((e) => e.id) ?? [];
      setCondition(status, failed.length === 0
        ? { type: 'ExtensionsInstalled', status: 'True', reason: 'Installed' }
        : { type: 'ExtensionsInstalled', status: 'False', reason: 'InstallFailed', message: `failed: ${failed.join(', ')} (a restart retries them)` });
    }
    return 'ready';
  }
  const target = { name, ...deps.layout.editor(name) };
  op = operations.start<Installed>(name, KIND, key, new Map(), async (done, signal, report) => {
    for (const [i, id] of missing.entries()) {
      report(`installing ${id} (${i + 1} of ${missing.length})`);
      deps.logs.event(name, 'INFO', `installing extension ${id}`);
      const outcome = await deps.installer.install(target, id, signal);
      if (outcome.cancelled || signal.aborted) {
        deps.logs.event(name, 'INFO', `install of ${id} cancelled: ${(signal.reason as Error | undefined)?.message ?? 'cancelled'}`);
        return;
      }
      done.set(id, outcome.ok
        ? { id, state: 'Installed', ...(outcome.version ? { version: outcome.version } : {}) }
        : { id, state: 'Failed', message: outcome.message });
      deps.logs.event(name, outcome.ok ? 'INFO' : 'WARN', outcome.ok
        ? `extension ${id} installed${outcome.version ? ` (${outcome.version})` : ''}`
        : `extension ${id} failed to install: ${outcome.message}`);
    }
  }, `installing ${missing[0]} (1 of ${missing.length})`);
  return installing(ctx, record, uid, status, wanted, known, op);
}

/** Records the operation's progress in status and hands it to the queue to wait for. */
async function installing(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
  wanted: string[], known: Installed, op: Operation<Installed>,
): Promise<'gone' | { waitFor: Promise<unknown> }> {
  const extensions = wanted.flatMap((id) => (known.has(id) ? [known.get(id)!] : []));
  if (extensions.length > 0) status.extensions = extensions;
  else delete status.extensions;
  Object.assign(status, { phase: 'Provisioning', reason: 'InstallingExtensions', message: op.progress });
  setCondition(status, { type: 'ExtensionsInstalled', status: 'False', reason: 'Installing', message: op.progress });
  if ((await ctx.commit(record, uid, status)) === 'gone') {
    await ctx.operations.cancel(record.name, 'its manifest is gone');
    return 'gone';
  }
  return { waitFor: op.done };
}

/** The spec's extensions and its groups', once each; groups the config lacks are said once. */
function wantedExtensions(ctx: ReconcileContext, record: ServerRecord): string[] {
  const spec = record.server!.spec;
  const groups = ctx.deps.config.extensionGroups;
  const unknown = unknownExtensionGroups(groups, spec.extensionGroups);
  const live = ctx.cache.live(record.name);
  if (unknown.length > 0 && JSON.stringify(unknown) !== JSON.stringify(live.unknownGroups)) {
    live.unknownGroups = unknown;
    ctx.deps.logs.event(record.name, 'WARN', `spec.extensionGroups names groups the config does not define: ${unknown.join(', ')}`);
  }
  return [...new Set([
    ...(spec.extensionGroups ?? []).flatMap((g) => (Object.hasOwn(groups, g) ? groups[g].extensions : [])),
    ...(spec.extensions ?? []),
  ])];
}
