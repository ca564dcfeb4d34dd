// Step: the server's workspace, made once per name (the editor's own folders come with its first
// start), and the spec's workspace source put into an empty workspace once, as an operation (a
// clone may take minutes; the worker is not held).
import { existsSync } from 'node:fs';
import { backoffMs } from '../core/backoff.ts';
import type { EditorServerStatus, WorkspaceSource } from '../manifests/types.ts';
import { ArchiveError } from '../workspace/archive-source.ts';
import { archivePath } from '../workspace/archives.ts';
import { gitUrlProblem } from '../workspace/git-source.ts';
import type { ServerRecord } from '../index/records.ts';
import { setCondition } from './conditions.ts';
import { gitSchemesOf, type ReconcileContext } from './context.ts';
import type { Operation } from './operations.ts';
import { PerServer } from './per-server.ts';
import { TerminalError } from './queue.ts';

const KIND = 'workspace source';
/** Retries of a failed clone back off from 1 s up to this (the network may come back). */
const MAX_RETRY_MS = 60_000;

/** A server's workspace as this step knows it. */
export interface SourceState {
  /** The workspace path the runtime gave once the server's storage was prepared. */
  workspacePath?: string;
  /** Failed attempts to apply the workspace source in a row, and when the next may start. */
  sourceFailures?: number;
  sourceRetryAt?: number;
}

export class Sources extends PerServer<SourceState> {
  constructor() {
    super(() => ({}));
  }
}

/** Makes the workspace if this name has not had it made yet; returns its path. */
export async function ensureWorkspaceOnce(ctx: Pick<ReconcileContext, 'deps' | 'sources'>, name: string): Promise<string> {
  const sources = ctx.sources.of(name);
  if (!sources.workspacePath) sources.workspacePath = await ctx.deps.storage.prepare(name);
  return sources.workspacePath;
}

/** What the operation ended with: the problem, if any, and whether retrying could fix it. */
interface Outcome { error?: string; terminal?: boolean }

/**
 * 'ready' when the spec has no source or the workspace has content (a source is applied to an
 * empty workspace only, once); 'gone' if the file vanished; else what the queue should do: wait
 * for the clone, or retry a failed one after a backoff. A source that can never apply (a scheme
 * the config does not allow) is a TerminalError.
 */
export async function ensureWorkspaceSource(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<'ready' | 'gone' | { waitFor: Promise<unknown> } | { requeueAfterMs: number }> {
  const { deps, operations } = ctx;
  const name = record.name;
  const source = record.server!.spec.workspace?.source;
  const key = JSON.stringify(source ?? null);
  const sources = ctx.sources.of(name);
  let op = operations.get<Outcome>(name, KIND);
  if (op && !op.settled && op.key !== key) {
    await operations.cancel(name, 'the spec changed');
    op = undefined;
  }
  if (!source?.git && !source?.archive) {
    sources.sourceFailures = undefined;
    sources.sourceRetryAt = undefined;
    return 'ready';
  }
  if (op?.settled) {
    operations.drop(name);
    if (op.key === key && op.data.terminal) return terminal(ctx, record, uid, status, op.data.error!);
    if (op.key === key && op.data.error !== undefined) return failed(ctx, record, uid, status, source, op.data.error);
  }
  // Storage reached only through a running editor (a cluster): the source is checked now and goes in once it runs.
  const deferred = !op && deps.storage.storageDeferred?.(name) === true;
  if (!op && !deferred && !(await deps.storage.workspaceEmpty(name))) {
    sources.sourceFailures = undefined;
    sources.sourceRetryAt = undefined;
    if (status.reason === 'PopulatingWorkspace' || status.reason === 'WorkspaceSourceFailed') {
      Object.assign(status, { reason: undefined, message: undefined });
    }
    const applied = status.conditions?.find((c) => c.type === 'WorkspaceReady');
    if (applied?.status !== 'True' || applied.reason === 'Created') {
      setCondition(status, { type: 'WorkspaceReady', status: 'True', reason: 'Populated', message: `${describe(source)} (it is applied only to an empty workspace)` });
    }
    return 'ready';
  }
  if (!op) {
    // Another operation (extension installs) runs: the source waits for it, one at a time.
    const other = operations.running(name);
    if (other) return { waitFor: other.done };
    if (sources.sourceRetryAt !== undefined && Date.now() < sources.sourceRetryAt) return { requeueAfterMs: sources.sourceRetryAt - Date.now() };
    if (source.archive) {
      const zip = archivePath(deps.layout, source.archive.sha256);
      if (!existsSync(zip)) return terminal(ctx, record, uid, status, `the archive ${source.archive.sha256} is not in ${zip}: upload the ZIP again`);
      if (deferred) return 'ready';
      deps.logs.event(name, 'INFO', `extracting archive ${source.archive.sha256} into the workspace`);
      op = operations.start<Outcome>(name, KIND, key, {}, async (outcome, signal) => {
        try {
          const { entries: count } = await deps.storage.populate(name, { archive: { sha256: source.archive!.sha256, path: zip } }, signal);
          deps.logs.event(name, 'INFO', `extracted ${count} entries of archive ${source.archive!.sha256}`);
        } catch (error) {
          // A bad archive stays bad: only a problem of the machine (disk full) is worth a retry.
          outcome.terminal = error instanceof ArchiveError;
          outcome.error = signal.aborted ? `cancelled: ${(signal.reason as Error).message}` : (error as Error).message;
          deps.logs.event(name, 'WARN', `extraction of archive ${source.archive!.sha256} failed: ${outcome.error}`);
        }
      }, `extracting archive ${source.archive.sha256}`);
      return populating(ctx, record, uid, status, op, 'Extracting');
    }
    const schemes = gitSchemesOf(deps);
    const problem = gitUrlProblem(source.git!.url, schemes);
    if (problem) return terminal(ctx, record, uid, status, problem);
    if (deferred) return 'ready';
    const timeoutMs = (deps.config.workspace?.cloneTimeoutSeconds ?? 600) * 1000;
    deps.logs.event(name, 'INFO', `cloning ${source.git!.url}${source.git!.ref ? ` at ${source.git!.ref}` : ''} into the workspace`);
    op = operations.start<Outcome>(name, KIND, key, {}, async (outcome, signal) => {
      const started = Date.now();
      try {
        await deps.storage.populate(name, { git: source.git!, schemes, timeoutMs }, signal);
        deps.logs.event(name, 'INFO', `cloned ${source.git!.url} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      } catch (error) {
        outcome.error = signal.aborted ? `cancelled: ${(signal.reason as Error).message}` : gitMessage(error, timeoutMs, Date.now() - started);
        deps.logs.event(name, 'WARN', `clone of ${source.git!.url} failed: ${outcome.error}`);
      }
    }, `cloning ${source.git!.url}`);
  }
  return populating(ctx, record, uid, status, op, source.git ? 'Cloning' : 'Extracting');
}

/** Records the operation under way in status and hands it to the queue to wait for. */
async function populating(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, op: Operation<Outcome>, reason: string,
): Promise<'gone' | { waitFor: Promise<unknown> }> {
  Object.assign(status, { phase: 'Provisioning', reason: 'PopulatingWorkspace', message: op.progress });
  setCondition(status, { type: 'WorkspaceReady', status: 'False', reason, message: op.progress });
  if ((await ctx.commit(record, uid, status)) === 'gone') {
    await ctx.operations.cancel(record.name, 'its manifest is gone');
    return 'gone';
  }
  return { waitFor: op.done };
}

function describe(source: WorkspaceSource): string {
  return source.git ? `git ${source.git.url}${source.git.ref ? ` at ${source.git.ref}` : ''}` : `archive ${source.archive!.sha256}`;
}

/** git's last lines, without its progress chatter; or that the clone ran out of time. */
function gitMessage(error: unknown, timeoutMs: number, tookMs: number): string {
  if (tookMs >= timeoutMs) return `the clone took longer than ${timeoutMs / 1000} s (workspace.cloneTimeoutSeconds in the config)`;
  const lines = String((error as Error).message ?? error).split('\n').map((l) => l.trim())
    .filter((l) => l && !/^(Cloning into|remote: (Counting|Compressing|Enumerating|Total)|Receiving|Resolving)/.test(l));
  return lines.slice(-3).join(' ') || 'git clone failed';
}

/** A clone that failed: the workspace stays empty, status says why, and it is tried again later. */
async function failed(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, source: WorkspaceSource, error: string,
): Promise<'gone' | { requeueAfterMs: number }> {
  const sources = ctx.sources.of(record.name);
  sources.sourceFailures = (sources.sourceFailures ?? 0) + 1;
  const delay = backoffMs(sources.sourceFailures, { initialMs: 1000, maxMs: MAX_RETRY_MS });
  sources.sourceRetryAt = Date.now() + delay;
  const message = `${describe(source)} failed: ${error}; trying again in ${Math.round(delay / 1000)} s`;
  Object.assign(status, { phase: 'Failed', reason: 'WorkspaceSourceFailed', message });
  setCondition(status, { type: 'WorkspaceReady', status: 'False', reason: source.git ? 'CloneFailed' : 'ExtractFailed', message });
  if ((await ctx.commit(record, uid, status)) === 'gone') return 'gone';
  return { requeueAfterMs: delay };
}

/** A source that can never apply as written: recorded once, not retried until the spec changes. */
async function terminal(ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, problem: string): Promise<never> {
  const message = `spec.workspace.source: ${problem}`;
  Object.assign(status, { phase: 'Failed', reason: 'WorkspaceSourceInvalid', message });
  setCondition(status, { type: 'WorkspaceReady', status: 'False', reason: 'SourceInvalid', message });
  await ctx.commit(record, uid, status);
  throw new TerminalError('WorkspaceSourceInvalid', message);
}
