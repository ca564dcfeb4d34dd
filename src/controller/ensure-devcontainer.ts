// Step: the workspace's devcontainer.json, read into a plan (src/devcontainer/) that the other
// steps take their part of: extensions and settings (the manifest's win), the editor's
// environment, its resources and image, the host requirements a start must meet. The file is read
// through the runtime's storage before each start (a person may have edited it) and once the
// workspace source has put its content in (on a cluster that happens in the running editor's
// Pod, so the plan may ask for what that editor was not started with: it is started again, once).
// A stopped server is not read at all: its status keeps the plan it last started with.
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { statfs } from 'node:fs/promises';
import { editorEnvironment } from '../core/child-env.ts';
import { devcontainerEnv } from '../devcontainer/env.ts';
import { parseDevcontainer } from '../devcontainer/parse.ts';
import { DEFAULT_PATHS, MAX_FILE_BYTES, type DevcontainerPlan, type DevcontainerStatus } from '../devcontainer/types.ts';
import type { ServerRecord } from '../index/records.ts';
import { effectiveResources } from '../manifests/resources.ts';
import type { EditorServerSpec, EditorServerStatus, Resources } from '../manifests/types.ts';
import type { ResourceRequirements } from '../runtime/interface.ts';
import { setCondition } from './conditions.ts';
import type { ReconcileContext } from './context.ts';
import { PerServer } from './per-server.ts';

/** What this step remembers of a server: the plan read last, and for which workspace content. */
export interface DevcontainerMemory {
  /** The plan read last (undefined: none, or not read since the service started: status has it). */
  plan?: DevcontainerPlan;
  /** The WorkspaceReady transition the plan was read after, so content that arrives later is read. */
  readAfter?: string;
}

export class DevcontainerPlans extends PerServer<DevcontainerMemory> {
  constructor() {
    super(() => ({}));
  }
}

/** The plan in effect for a server: read in this run, else the one its status kept; none when its spec says ignore. */
export function activePlan(ctx: Pick<ReconcileContext, 'devcontainer' | 'table'>, name: string): DevcontainerPlan | undefined {
  const server = ctx.table.records.get(name)?.server;
  if (!server || server.spec.devcontainer === 'ignore') return undefined;
  const memory = ctx.devcontainer.peek(name);
  return memory && 'plan' in memory ? memory.plan : server.status?.devcontainer?.plan;
}

/**
 * Reads devcontainer.json into `status.devcontainer` (and the step's memory), when it is due: before
 * a start (`starting`), or when the workspace source's content arrived after the last read. True
 * when the running editor must start again for the plan (its image, resources or environment
 * differ from what it started with, and the read followed its workspace's first content).
 */
export async function ensureDevcontainer(
  ctx: ReconcileContext, record: ServerRecord, status: EditorServerStatus, starting: boolean,
): Promise<{ restart: boolean }> {
  const { deps } = ctx;
  const name = record.name;
  const spec = record.server!.spec;
  const memory = ctx.devcontainer.of(name);
  const ready = status.conditions?.find((c) => c.type === 'WorkspaceReady' && c.status === 'True');
  const arrived = ready !== undefined && spec.workspace?.source !== undefined && status.devcontainer?.readAfter !== ready.lastTransitionTime;
  if (!starting && !arrived) return { restart: false };
  if (deps.storage.storageDeferred?.(name)) return { restart: false };
  const before = status.devcontainer;
  const next = await readPlan(ctx, name, spec);
  if (ready) next.readAfter = ready.lastTransitionTime;
  memory.plan = next.plan; // undefined too: read, and there is none
  if (before?.lifecycle) next.lifecycle = before.lifecycle;
  if (before?.workspaceKey) next.workspaceKey = before.workspaceKey;
  if (before?.startedWith) next.startedWith = before.startedWith;
  status.devcontainer = next;
  if (next.state === 'invalid') {
    setCondition(status, { type: 'DevcontainerRead', status: 'False', reason: 'Invalid', message: next.message });
  } else {
    setCondition(status, { type: 'DevcontainerRead', status: 'True', reason: next.state === 'applied' ? 'Read' : next.state === 'ignored' ? 'Ignored' : 'NotFound', message: next.message });
  }
  if (next.plan && next.plan.sha256 !== before?.plan?.sha256) {
    deps.logs.event(name, 'INFO', `honouring ${next.plan.path}${next.plan.warnings.length ? ` (${next.plan.warnings.length} field(s) not honoured: see the server's devcontainer warnings)` : ''}`);
    for (const warning of next.plan.warnings) deps.logs.event(name, 'WARN', `${next.plan.path}: ${warning}`);
  }
  // Content that came after the editor started (a cluster fills the volume through the running Pod).
  const restart = !starting && arrived && status.runtimeRef != null && next.startedWith !== undefined && startKey(ctx, record, next) !== next.startedWith;
  return { restart };
}

async function readPlan(ctx: ReconcileContext, name: string, spec: EditorServerSpec): Promise<DevcontainerStatus> {
  const { deps } = ctx;
  if (spec.devcontainer === 'ignore') return { state: 'ignored', message: 'spec.devcontainer says ignore' };
  const paths = spec.devcontainer ? [spec.devcontainer] : [...DEFAULT_PATHS];
  for (const path of paths) {
    let bytes: Buffer | undefined;
    try {
      bytes = await deps.storage.readWorkspaceFile(name, path, MAX_FILE_BYTES);
    } catch (error) {
      return { state: 'invalid', message: (error as Error).message };
    }
    if (bytes === undefined) continue;
    const parsed = parseDevcontainer(bytes.toString('utf8'), path, createHash('sha256').update(bytes).digest('hex'));
    if ('error' in parsed) return { state: 'invalid', message: parsed.error };
    const plan = parsed.plan;
    if (plan.image && !deps.workload.runsImages) plan.warnings.push(`image: not honoured by this runtime: its editors run on this machine, not in an image (the Kubernetes runtime honours it)`);
    if (Object.keys(plan.lifecycle).length > 0 && !deps.workload.run) plan.warnings.push('lifecycle commands: not run: this runtime cannot run commands beside the editor');
    return { state: 'applied', message: `read ${path}`, plan };
  }
  return { state: 'none', message: spec.devcontainer ? `${spec.devcontainer} (spec.devcontainer) is not in the workspace` : `no ${DEFAULT_PATHS.join(' or ')} in the workspace` };
}

/** The environment the plan gives the editor, substituted for where it runs. */
export function planEnv(ctx: Pick<ReconcileContext, 'devcontainer' | 'table'>, record: ServerRecord, workspace: string): Record<string, string> {
  const plan = activePlan(ctx, record.name);
  if (!plan) return {};
  const local = editorEnvironment(process.env, record.name);
  return devcontainerEnv(plan, { localEnv: local, containerEnv: local, containerWorkspaceFolder: workspace, id: record.server?.metadata.uid });
}

/** The resources a start asks for: the manifest's, over the plan's host requirements as requests, over the config's defaults. */
export function planResources(
  ctx: Pick<ReconcileContext, 'devcontainer' | 'table'>, record: ServerRecord, defaults: ResourceRequirements | undefined,
): ResourceRequirements | undefined {
  const spec = record.server!.spec;
  const needs = activePlan(ctx, record.name)?.hostRequirements;
  const requests: NonNullable<Resources['requests']> = {};
  if (needs?.cpus !== undefined) requests.cpu = String(needs.cpus);
  if (needs?.memoryBytes !== undefined) requests.memory = `${Math.ceil(needs.memoryBytes / 2 ** 20)}Mi`;
  const given: Resources | undefined = Object.keys(requests).length === 0 ? spec.resources : {
    ...spec.resources,
    requests: { ...requests, ...spec.resources?.requests },
  };
  return effectiveResources(defaults, given);
}

/** What an editor was started with that the plan decides (image, resources, environment): a change of it needs a new start. */
export function startKey(ctx: ReconcileContext, record: ServerRecord, devcontainer: DevcontainerStatus | undefined): string {
  const plan = devcontainer?.plan;
  const workspace = ctx.sources.peek(record.name)?.workspacePath ?? '';
  return JSON.stringify([plan?.image ?? null, plan?.hostRequirements ?? null, plan ? devcontainerEnv(plan, { localEnv: {}, containerWorkspaceFolder: workspace }) : null]);
}

/**
 * The host requirements this machine cannot meet, in words, or undefined: cores, memory (the
 * machine's, or its cgroup's) and free space where the workspaces are. Only where editors run on
 * this machine (a cluster's scheduler weighs a Pod's requests itself).
 */
export async function unmetRequirements(ctx: ReconcileContext, plan: DevcontainerPlan | undefined): Promise<string | undefined> {
  const needs = plan?.hostRequirements;
  const memory = ctx.deps.workload.memory();
  if (!needs || memory === undefined) return undefined;
  const problems: string[] = [];
  const cores = availableParallelism();
  if (needs.cpus !== undefined && needs.cpus > cores) problems.push(`${needs.cpus} CPUs (this machine has ${cores})`);
  const mb = needs.memoryBytes === undefined ? 0 : Math.ceil(needs.memoryBytes / 2 ** 20);
  if (mb > memory.totalMb) problems.push(`${mb} MB of memory (this machine has ${memory.totalMb} MB, ${memory.source})`);
  if (needs.storageBytes !== undefined) {
    const free = await statfs(ctx.deps.layout.dataDir).then((s) => s.bavail * s.bsize, () => undefined);
    if (free !== undefined && needs.storageBytes > free) problems.push(`${gb(needs.storageBytes)} of storage (${gb(free)} free where the workspaces are)`);
  }
  return problems.length ? `${plan!.path} asks hostRequirements this machine cannot meet: ${problems.join(', ')}` : undefined;
}

function gb(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}
