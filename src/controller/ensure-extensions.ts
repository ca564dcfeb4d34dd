// Step: the extensions the spec asks for (its own and its groups'), compared with what really is
// in the server's extensions folder, not with status: missing ones are installed, ones the
// controller installed and the spec no longer names are uninstalled. Installs run as an
// operation outside the worker (they may take minutes), also while the editor runs; a spec
// that wants other extensions cancels the one under way, killing its installer.
import { unknownExtensionGroups } from '../config/settings.ts';
import { sameData } from '../core/equal.ts';
import { extensionName, isVsixPath, pinnedVersion, vsixIdentity } from '../extensions/extensions-folder.ts';
import type { ServerRecord } from '../index/records.ts';
import type { EditorServerStatus, ExtensionStatus } from '../manifests/types.ts';
import { setCondition } from './conditions.ts';
import type { ReconcileContext } from './context.ts';
import { activePlan } from './ensure-devcontainer.ts';
import type { Operation } from './operations.ts';
import { PerServer } from './per-server.ts';

const KIND = 'extension installs';

/** What this step remembers of a server's extensions, in memory only. */
export interface ExtensionsState {
  /** Extension groups the spec names that the config lacks, already reported. */
  unknownGroups?: string[];
  /**
   * The wanted extensions (as JSON) last found all in place before a start. A start the platform
   * has not placed is asked again with them as they were: no editor has used the volume since,
   * and reading it on a cluster means a helper Pod on the node at every try.
   */
  ready?: string;
  /**
   * The running editor had extensions changed under it (ends with the service; status'
   * ReloadRequired condition carries it across a restart). A start of the editor clears it.
   */
  reloadNeeded?: boolean;
}

export class ExtensionsSeen extends PerServer<ExtensionsState> {
  constructor() {
    super(() => ({}));
  }
}

interface Work {
  /** Install outcomes by id. */
  outcomes: Map<string, ExtensionStatus>;
  /** Ids whose uninstall was tried (whatever came of it: a failure is logged, not retried). */
  removed: string[];
  /** Something changed under a running editor: it needs a reload to see it. */
  changedWhileRunning: boolean;
}

/**
 * Stopped mode (before a start, or for a stopped server): 'ready' once every wanted extension
 * has an outcome and no unwanted one is left; 'gone' if the file vanished; else the operation
 * to wait for (status says Provisioning, InstallingExtensions, and how far).
 * Running mode: never waits; the operation's progress goes into status' condition and the
 * caller goes on observing the editor.
 */
export async function ensureExtensions(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, mode: 'stopped' | 'running' = 'stopped',
): Promise<'ready' | 'gone' | { waitFor: Promise<unknown> }> {
  const { deps, operations } = ctx;
  const name = record.name;
  const wanted = wantedExtensions(ctx, record);
  const key = JSON.stringify(wanted);
  const known = new Map((status.extensions ?? []).map((e) => [e.id, e]));
  let op = operations.get<Work>(name, KIND);
  if (op && !op.settled && op.key !== key) {
    // The spec wants other extensions now: what was installed is kept, the rest starts over.
    await operations.cancel(name, 'the spec changed');
  }
  // Installs that finished count, whatever happened to the operation afterwards.
  for (const [id, entry] of op?.data.outcomes ?? []) if (wanted.includes(id)) known.set(id, entry);
  const tried = new Set(op?.data.removed ?? []);
  const seen = ctx.extensions.of(name);
  if (mode === 'stopped' && ctx.placement.peek(name)?.notPlaced && !op && seen.ready === key) return 'ready';
  if (op?.settled && op.data.changedWhileRunning) seen.reloadNeeded = true;
  if (mode === 'stopped') seen.reloadNeeded = false;
  if (op && !op.settled && op.key === key) return installing(ctx, record, uid, status, wanted, known, op, mode, await identities([...wanted, ...known.keys()]));
  if (op?.settled) operations.drop(name);
  // Storage reached only through a running editor (a cluster): looked at and installed once it runs.
  if (deps.storage.storageDeferred?.(name)) return 'ready';

  // Nothing wanted and nothing recorded (most servers): what the folder holds changes nothing.
  const present = wanted.length === 0 && known.size === 0 ? new Map<string, string | undefined>() : await deps.storage.installedExtensions(name);
  const who = await identities([...wanted, ...known.keys()]);
  const isPresent = (id: string) => {
    const it = who.get(id);
    return it !== undefined && present.has(it.name) && (it.version === undefined || present.get(it.name) === it.version);
  };
  // A failed install is not retried until a restart; an installed one whose folder went is.
  const missing = wanted.filter((id) => !isPresent(id) && known.get(id)?.state !== 'Failed');
  const wantedNames = new Set(wanted.flatMap((id) => who.get(id)?.name ?? []));
  const unwanted = [...known.values()].flatMap((e) => {
    const name = who.get(e.id)?.name;
    return e.state === 'Installed' && name !== undefined && !wantedNames.has(name) && present.has(name) && !tried.has(e.id) ? [{ id: e.id, name }] : [];
  });

  if (missing.length === 0 && unwanted.length === 0) {
    status.extensions = wanted.map((id) => (isPresent(id) && known.get(id)?.state !== 'Installed'
      ? { id, state: 'Installed' as const, ...(present.get(who.get(id)!.name) ? { version: present.get(who.get(id)!.name) } : {}) }
      : known.get(id)!));
    if (status.extensions.length === 0) delete status.extensions;
    if (status.reason === 'InstallingExtensions') Object.assign(status, { reason: undefined, message: undefined });
    const condition = status.conditions?.find((c) => c.type === 'ExtensionsInstalled');
    if (condition || wanted.length > 0 || seen.reloadNeeded) {
      const failed = status.extensions?.filter((e) => e.state === 'Failed').map((e) => e.id) ?? [];
      if (mode === 'running' && condition?.reason === 'ReloadRequired') seen.reloadNeeded = true;
      const needsReload = mode === 'running' && seen.reloadNeeded === true;
      setCondition(status, failed.length > 0
        ? { type: 'ExtensionsInstalled', status: 'False', reason: 'InstallFailed', message: `failed: ${failed.join(', ')} (a restart retries them)` }
        : needsReload
          ? { type: 'ExtensionsInstalled', status: 'True', reason: 'ReloadRequired', message: 'extensions changed while the editor runs: reload its window (or restart the server) to use them' }
          : { type: 'ExtensionsInstalled', status: 'True', reason: 'Installed' });
    }
    if (mode === 'stopped') seen.ready = key;
    return 'ready';
  }
  const data: Work = { outcomes: new Map(), removed: [], changedWhileRunning: mode === 'running' };
  const steps = unwanted.length + missing.length;
  const first = unwanted.length > 0 ? `uninstalling ${unwanted[0].id}` : `installing ${missing[0]}`;
  op = operations.start<Work>(name, KIND, key, data, async (done, signal, report) => {
    for (const [i, { id, name: extension }] of unwanted.entries()) {
      report(`uninstalling ${id} (${i + 1} of ${steps})`);
      const outcome = await deps.storage.uninstallExtension(name, extension, signal);
      if (outcome.cancelled || signal.aborted) return;
      done.removed.push(id);
      deps.logs.event(name, outcome.ok ? 'INFO' : 'WARN', outcome.ok
        ? `extension ${id} uninstalled`
        : `extension ${id} could not be uninstalled (it is no longer managed): ${outcome.message}`);
    }
    for (const [i, id] of missing.entries()) {
      report(`installing ${id} (${unwanted.length + i + 1} of ${steps})`);
      deps.logs.event(name, 'INFO', `installing extension ${id}`);
      const outcome = await deps.storage.installExtension(name, id, signal);
      if (outcome.cancelled || signal.aborted) {
        deps.logs.event(name, 'INFO', `install of ${id} cancelled: ${(signal.reason as Error | undefined)?.message ?? 'cancelled'}`);
        return;
      }
      done.outcomes.set(id, outcome.ok
        ? { id, state: 'Installed', ...(outcome.version ? { version: outcome.version } : {}) }
        : { id, state: 'Failed', message: outcome.message });
      deps.logs.event(name, outcome.ok ? 'INFO' : 'WARN', outcome.ok
        ? `extension ${id} installed${outcome.version ? ` (${outcome.version})` : ''}`
        : `extension ${id} failed to install: ${outcome.message}`);
    }
  }, `${first} (1 of ${steps})`);
  return installing(ctx, record, uid, status, wanted, known, op, mode, who);
}

/** Records the operation's progress in status; in stopped mode hands it to the queue to wait for. */
async function installing(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
  wanted: string[], known: Map<string, ExtensionStatus>, op: Operation<Work>, mode: 'stopped' | 'running', who: Identities,
): Promise<'ready' | 'gone' | { waitFor: Promise<unknown> }> {
  // Entries still to be uninstalled stay in status until they are, so a crash forgets none.
  const wantedNames = new Set(wanted.flatMap((id) => who.get(id)?.name ?? []));
  const extensions = [...wanted.flatMap((id) => (known.has(id) ? [known.get(id)!] : [])),
    ...[...known.values()].filter((e) => !wanted.includes(e.id) && !wantedNames.has(who.get(e.id)?.name ?? '') && !op.data.removed.includes(e.id))];
  if (extensions.length > 0) status.extensions = extensions;
  else delete status.extensions;
  setCondition(status, { type: 'ExtensionsInstalled', status: 'False', reason: 'Installing', message: op.progress });
  if (mode === 'running') return 'ready';
  Object.assign(status, { phase: 'Provisioning', reason: 'InstallingExtensions', message: op.progress });
  if ((await ctx.commit(record, uid, status)) === 'gone') {
    await ctx.operations.cancel(record.name, 'its manifest is gone');
    return 'gone';
  }
  return { waitFor: op.done };
}

type Identities = Map<string, { name: string; version?: string } | undefined>;

/**
 * What each spec entry stands for in the extensions folder: its lower-case publisher.name and
 * the version it pins; a .vsix path is read for them (undefined when the file is missing).
 */
async function identities(entries: string[]): Promise<Identities> {
  const found: Identities = new Map();
  for (const entry of new Set(entries)) {
    found.set(entry, isVsixPath(entry) ? await vsixIdentity(entry) : { name: extensionName(entry), version: pinnedVersion(entry) });
  }
  return found;
}

/** The spec's extensions and its groups', once each; groups the config lacks are said once. */
function wantedExtensions(ctx: ReconcileContext, record: ServerRecord): string[] {
  const spec = record.server!.spec;
  const groups = ctx.deps.config.extensionGroups;
  const unknown = unknownExtensionGroups(groups, spec.extensionGroups);
  const seen = ctx.extensions.of(record.name);
  if (unknown.length > 0 && !sameData(unknown, seen.unknownGroups ?? null)) {
    seen.unknownGroups = unknown;
    ctx.deps.logs.event(record.name, 'WARN', `spec.extensionGroups names groups the config does not define: ${unknown.join(', ')}`);
  }
  const own = [...new Set([
    ...(spec.extensionGroups ?? []).flatMap((g) => (Object.hasOwn(groups, g) ? groups[g].extensions : [])),
    ...(spec.extensions ?? []),
  ])];
  // devcontainer.json's extensions, where the manifest and its groups name none of the same extension (theirs win: a pinned version).
  const named = new Set(own.map((id) => (isVsixPath(id) ? id : extensionName(id))));
  const fromFile = (activePlan(ctx, record.name)?.extensions ?? []).filter((id) => !named.has(extensionName(id)));
  return [...own, ...fromFile];
}
