// Step: devcontainer.json's lifecycle commands, run beside the editor through the runtime
// (EditorWorkload.run) as an operation, so the worker is never held. Before a start: the commands
// not yet run for this workspace, in order, up to and including waitFor (postStartCommand too
// when waitFor is it or later); the editor waits for them (Provisioning, RunningLifecycleCommands).
// Once the editor runs: the rest, in the background; postAttachCommand when a person opens it.
//
// onCreate, updateContent and postCreate run once per workspace: status.devcontainer.lifecycle
// records each, tied to the workspace by its server's uid (workspaceKey), so neither a restart of
// the editor nor of the service runs a Succeeded one again, and a server made again (a new uid,
// a new workspace) runs them all. A failing command (non-zero exit, a signal, or it cannot start)
// ends its chain: the later steps are Skipped, the condition LifecycleCommands is False
// (CommandFailed), and the editor still starts, as VS Code lets one connect to a container whose
// postCreate failed. A restart is our rebuild: the Failed and Skipped steps run again after a
// restart request, a spec change (a new generation) or an edit of devcontainer.json, and not at
// an editor's crash-restart under the same spec. A step cut short (a stop, a delete, a restart,
// devcontainer.json edited or turned off, the service stopping) was not done: it runs again at
// the next start.
import { chainBlocked, dueSteps, failure, indexOf, once, stepsBeforeStart, type LifecycleRecord } from '../devcontainer/lifecycle.ts';
import { LIFECYCLE_ORDER, type DevcontainerPlan, type LifecycleName } from '../devcontainer/types.ts';
import type { ServerRecord } from '../index/records.ts';
import { RESTARTED_AT, type EditorServerStatus } from '../manifests/types.ts';
import type { CommandEnd, RuntimeRef } from '../runtime/interface.ts';
import { setCondition } from './conditions.ts';
import type { ReconcileContext } from './context.ts';
import { activePlan, planEnv } from './ensure-devcontainer.ts';
import { OutputBudget } from './lifecycle-output.ts';
import type { Operation } from './operations.ts';
import { PerServer } from './per-server.ts';

const KIND = 'lifecycle commands';
const CONDITION = 'LifecycleCommands';
const POST_START: LifecycleName = 'postStartCommand';
const POST_ATTACH: LifecycleName = 'postAttachCommand';

/** What this step remembers of a server, in memory only: the start under way and the attaches owed. */
export interface LifecycleMemory {
  /**
   * The start being prepared, then the editor it started (`editor`, once seen running): which
   * per-start steps (postStart, postAttach) ran for it, and whether its chain failed.
   */
  start?: { editor?: string; ran: Set<LifecycleName>; failed?: boolean };
  /** A person opened the editor (its first tab, or again after every tab was closed): postAttachCommand is owed. */
  attachOwed?: boolean;
  /**
   * The commands' operation until its outcome is in status. Kept here, not only among the
   * server's operations: another (extension installs) may take its place there once it settled,
   * and what it did must not be lost with it.
   */
  op?: Operation<Work>;
}

export class LifecycleRuns extends PerServer<LifecycleMemory> {
  constructor() {
    super(() => ({}));
  }
}

/** What the operation did: each step's outcome as it goes (Running, then how it ended). */
interface Work {
  results: LifecycleRecord;
}

/**
 * The spec, restart request and devcontainer.json a failure is recorded under: while they stay
 * the same the failed chain is not run again (no crash loop of a failing npm install).
 */
export function retryKey(record: ServerRecord, plan: DevcontainerPlan): string {
  const server = record.server!;
  return JSON.stringify([plan.sha256, server.metadata.generation ?? null, server.metadata.annotations?.[RESTARTED_AT] ?? null]);
}

/**
 * What the commands under way work toward: a start to come (`before`) or the editor running,
 * under this devcontainer.json and restart request. Another cuts them short (the file changed,
 * a restart, another editor); other spec changes (an extension added) do not.
 */
function workKey(record: ServerRecord, plan: DevcontainerPlan, editor: string): string {
  return JSON.stringify([editor, plan.sha256, record.server!.metadata.annotations?.[RESTARTED_AT] ?? null]);
}

/**
 * Before a start: 'ready' when nothing is due before the editor may start; 'gone' when the
 * manifest vanished; else the operation to wait for (status: Provisioning, RunningLifecycleCommands).
 */
export async function ensureLifecycleBeforeStart(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<'ready' | 'gone' | { waitFor: Promise<unknown> }> {
  const name = record.name;
  const plan = lifecyclePlan(ctx, record);
  const memory = ctx.lifecycle.of(name);
  // A start after another editor ran (or a first): its per-start steps are owed again.
  if (!memory.start || memory.start.editor !== undefined) memory.start = { ran: new Set() };
  memory.attachOwed = false;
  if (!plan) {
    await cancelLifecycle(ctx, name, 'devcontainer.json no longer asks for them', status);
    return 'ready';
  }
  // On a cluster the commands run in the editor's own container, which does not exist before its
  // start: there they all run once it runs (waitFor cannot hold the editor).
  if (ctx.deps.storage.storageDeferred?.(name)) return 'ready';
  const key = retryKey(record, plan);
  const work = workKey(record, plan, 'before');
  const op = await settle(ctx, record, uid, status, plan, work);
  if (op) return waiting(ctx, record, uid, status, op);
  const steps = stepsBeforeStart(plan, dueSteps(plan, recordOf(status), key, memory.start.ran));
  if (steps.length === 0) {
    if (status.reason === 'RunningLifecycleCommands') Object.assign(status, { reason: undefined, message: undefined });
    return 'ready';
  }
  // Another operation (extension installs) runs: these wait for it, one at a time.
  const other = ctx.operations.running(name);
  if (other) return { waitFor: other.done };
  return waiting(ctx, record, uid, status, begin(ctx, record, status, plan, steps, work));
}

/**
 * While the editor runs: once it is Running, the steps still due (and postAttachCommand when a
 * person opened it) in the background. Never waits; writes status when it changed.
 */
export async function ensureLifecycleRunning(ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus): Promise<void> {
  const name = record.name;
  const plan = lifecyclePlan(ctx, record);
  const memory = ctx.lifecycle.of(name);
  const editor = JSON.stringify(ctx.table.editorOf(name) ?? null);
  if (!memory.start) {
    // An editor adopted at the service's start: its start (and postStartCommand) was the service's before.
    memory.start = { editor, ran: new Set([POST_START]) };
  }
  memory.start.editor ??= editor;
  if (!plan) {
    await cancelLifecycle(ctx, name, 'devcontainer.json no longer asks for them', status);
    return;
  }
  const key = retryKey(record, plan);
  const work = workKey(record, plan, editor);
  const op = await settle(ctx, record, uid, status, plan, work);
  if (!op && status.phase === 'Running' && !ctx.operations.running(name)) {
    const due = dueSteps(plan, recordOf(status), key, memory.start.ran);
    // postAttach follows the steps still due; never after a failure of this start's chain.
    const attachable = plan.lifecycle[POST_ATTACH] !== undefined && !memory.start.failed && !chainBlocked(plan, recordOf(status), key);
    const attach = memory.attachOwed === true && attachable && due.length === 0;
    const steps = attach ? [POST_ATTACH] : due;
    if (attach || !attachable) memory.attachOwed = false;
    if (steps.length > 0) begin(ctx, record, status, plan, steps, work);
  }
  showProgress(status, plan, memory.op);
  await ctx.commit(record, uid, status);
}

/** A person opened server `name`'s editor (its first tab, or again after every tab was closed): postAttachCommand is owed. */
export function requestAttach(ctx: Pick<ReconcileContext, 'lifecycle'>, name: string): void {
  ctx.lifecycle.of(name).attachOwed = true;
}

/**
 * Cuts short the lifecycle commands under way (the server stops): what they started ends too, and
 * the step cut short is no longer shown Running (it was not done: the next start runs it).
 */
export async function cancelLifecycle(ctx: Pick<ReconcileContext, 'operations' | 'lifecycle'>, name: string, why: string, status: EditorServerStatus): Promise<void> {
  const memory = ctx.lifecycle.peek(name);
  const op = memory?.op;
  if (op) {
    await cut(ctx, name, op, why);
    // What it finished before the cut counts.
    if (status.devcontainer) takeResults(ctx, name, status, status.devcontainer.plan ?? { lifecycle: {} }, op);
    memory.op = undefined;
  }
  const lifecycle = status.devcontainer?.lifecycle;
  for (const [step, state] of Object.entries(lifecycle ?? {})) if (state.state === 'Running') delete lifecycle![step as LifecycleName];
  const condition = status.conditions?.find((c) => c.type === CONDITION);
  if (condition?.status === 'Unknown') status.conditions = status.conditions!.filter((c) => c !== condition);
}

/** The plan when it has lifecycle commands and the runtime can run them (else readPlan warned). */
function lifecyclePlan(ctx: ReconcileContext, record: ServerRecord): DevcontainerPlan | undefined {
  const plan = activePlan(ctx, record.name);
  return plan && ctx.deps.workload.run && Object.keys(plan.lifecycle).length > 0 ? plan : undefined;
}

function recordOf(status: EditorServerStatus): LifecycleRecord {
  return status.devcontainer?.lifecycle ?? {};
}

/**
 * Ties the record to this workspace (a new uid starts it afresh), takes in what a settled
 * operation did, and cancels one under way for another key. The operation still under way for
 * this key, if any.
 */
async function settle(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, plan: DevcontainerPlan, key: string,
): Promise<Operation<Work> | undefined> {
  const name = record.name;
  const devcontainer = (status.devcontainer ??= { state: 'applied', plan });
  if (devcontainer.workspaceKey !== uid) {
    devcontainer.workspaceKey = uid;
    devcontainer.lifecycle = {};
  }
  const memory = ctx.lifecycle.of(name);
  const op = memory.op;
  if (op && !op.settled && op.key !== key) await cut(ctx, name, op, 'devcontainer.json or the editor changed');
  if (op) takeResults(ctx, name, status, plan, op);
  if (op?.settled) {
    memory.op = undefined;
    if (ctx.operations.get(name, KIND) === op) ctx.operations.drop(name);
    return undefined;
  }
  return op;
}

/** Cancels the operation while it is the server's (one under way is: no other starts meanwhile), and waits for its end. */
async function cut(ctx: Pick<ReconcileContext, 'operations'>, name: string, op: Operation<Work>, why: string): Promise<void> {
  if (!op.settled && ctx.operations.get(name, KIND) === op) await ctx.operations.cancel(name, why);
  await op.done;
}

/** Copies the operation's outcomes into status and the start's memory; a failure marks the later steps Skipped. */
function takeResults(
  ctx: Pick<ReconcileContext, 'lifecycle'>, name: string, status: EditorServerStatus, plan: Pick<DevcontainerPlan, 'lifecycle'>, op: Operation<Work>,
): void {
  const lifecycle = (status.devcontainer!.lifecycle ??= {});
  const memory = ctx.lifecycle.of(name);
  for (const step of LIFECYCLE_ORDER) {
    const result = op.data.results[step];
    if (!result) continue;
    // Cut short by a cancel: not done, so it runs again (a Running entry says the same after a service restart).
    if (result.state === 'Running' && op.settled) {
      delete lifecycle[step];
      continue;
    }
    lifecycle[step] = result;
    if (!once(step) && result.state !== 'Running') memory.start?.ran.add(step);
    if (result.state === 'Failed') {
      if (memory.start) memory.start.failed = true;
      for (const later of LIFECYCLE_ORDER.filter((s) => indexOf(s) > indexOf(step) && plan.lifecycle[s] !== undefined)) {
        lifecycle[later] = { state: 'Skipped', message: `not run: ${step} failed`, at: result.at, under: result.under };
        if (!once(later)) memory.start?.ran.add(later);
      }
      break;
    }
  }
}

/** Starts the operation that runs `steps` in order, stopping at the first failure. */
function begin(
  ctx: ReconcileContext, record: ServerRecord, status: EditorServerStatus, plan: DevcontainerPlan, steps: LifecycleName[], key: string,
): Operation<Work> {
  const { deps } = ctx;
  const name = record.name;
  const under = retryKey(record, plan);
  const cwd = status.workspacePath ?? ctx.sources.peek(name)?.workspacePath ?? '';
  const env = planEnv(ctx, record, cwd);
  // Before a start there is no editor yet: the process runtime needs none (its commands run on this machine).
  const ref: RuntimeRef = ctx.table.editorOf(name) ?? { kind: deps.workload.kind };
  const op = ctx.operations.start<Work>(name, KIND, key, { results: {} }, async (work, signal, report) => {
    const log = new OutputBudget((message) => deps.logs.event(name, 'INFO', message));
    for (const step of steps) {
      const commands = plan.lifecycle[step]!.commands;
      work.results[step] = { state: 'Running', at: new Date().toISOString() };
      report(`running ${step}`);
      deps.logs.event(name, 'INFO', `${step}: running ${commands.map((c) => c.label ?? describe(c.command)).join(', ')}`);
      const started = Date.now();
      // The object form's named commands run side by side; the step ends when all have.
      const ends = await Promise.all(commands.map(async ({ label, command }) => {
        const prefix = label === undefined ? step : `${step} ${label}`;
        let last = '';
        const end: CommandEnd = await deps.workload.run!(name, ref, command, {
          cwd, env, signal,
          onOutput: (_stream, line) => {
            if (line.trim() !== '') last = line;
            log.line(`[${prefix}] ${line}`);
          },
        }).catch((error: Error) => ({ exitCode: null, error: error.message }));
        return { label, end, last };
      }));
      log.flush(step);
      if (signal.aborted) {
        deps.logs.event(name, 'INFO', `${step} cut short: ${(signal.reason as Error | undefined)?.message ?? 'cancelled'}`);
        return; // its Running entry is dropped: it runs again
      }
      const failed = ends.find(({ end }) => end.exitCode !== 0);
      const at = new Date().toISOString();
      if (!failed) {
        work.results[step] = { state: 'Succeeded', at };
        deps.logs.event(name, 'INFO', `${step} finished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
        report(`${step} finished`);
        continue;
      }
      const message = failure(step, failed.label, failed.end, failed.last);
      work.results[step] = { state: 'Failed', exitCode: failed.end.exitCode, message, at, under };
      deps.logs.event(name, 'ERROR', message);
      report(message);
      return;
    }
  }, `running ${steps[0]}`);
  ctx.lifecycle.of(name).op = op;
  return op;
}

function describe(command: { shell: string } | { argv: string[] }): string {
  const text = 'shell' in command ? command.shell : command.argv.join(' ');
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Records the operation under way in status and hands it to the queue to wait for. */
async function waiting(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, op: Operation<Work>,
): Promise<'gone' | { waitFor: Promise<unknown> }> {
  const plan = status.devcontainer?.plan;
  if (plan) showProgress(status, plan, op);
  Object.assign(status, { phase: 'Provisioning', reason: 'RunningLifecycleCommands', message: op.progress });
  if ((await ctx.commit(record, uid, status)) === 'gone') {
    await ctx.operations.cancel(record.name, 'its manifest is gone');
    return 'gone';
  }
  return { waitFor: op.done };
}

/** The condition LifecycleCommands: False naming the failed command, Unknown while they run, True once all that ran succeeded. */
function showProgress(status: EditorServerStatus, plan: DevcontainerPlan, op: Operation<Work> | undefined): void {
  const recorded = recordOf(status);
  const failed = LIFECYCLE_ORDER.find((step) => plan.lifecycle[step] && recorded[step]?.state === 'Failed');
  const running = op && !op.settled ? Object.entries(op.data.results).find(([, r]) => r.state === 'Running')?.[0] : undefined;
  if (failed) setCondition(status, { type: CONDITION, status: 'False', reason: 'CommandFailed', message: recorded[failed]!.message });
  else if (running) setCondition(status, { type: CONDITION, status: 'Unknown', reason: 'Running', message: `running ${running}` });
  else if (Object.values(recorded).some((r) => r.state === 'Succeeded')) {
    const done = LIFECYCLE_ORDER.filter((step) => recorded[step]?.state === 'Succeeded');
    setCondition(status, { type: CONDITION, status: 'True', reason: 'Succeeded', message: `ran ${done.join(', ')}` });
  }
}

