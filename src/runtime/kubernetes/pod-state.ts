// What a Pod's status says about its editor, read without asking anyone: whether it serves,
// why not (the scheduler's answer, an image that cannot be pulled, a node that stopped
// reporting), and how its editor's container ended. Pure functions over the Pod object.
import { constants } from 'node:os';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { EditorProblem, ExitInfo } from '../interface.ts';
import { ALREADY_RAN_EXIT, EDITOR_CONTAINER } from './names.ts';

/** Waiting reasons that mean the editor cannot start as things stand (a person has to act or wait). */
const STUCK = new Set(['ImagePullBackOff', 'ErrImagePull', 'ErrImageNeverPull', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError', 'CrashLoopBackOff', 'RunContainerError']);

/** The status of the Pod's editor container (or of another of its containers, by name). */
export function editorStatus(pod: V1Pod, container = EDITOR_CONTAINER): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((c) => c.name === container);
}

/** The port the editor's container serves on (the server's route number). */
export function containerPort(pod: V1Pod): number | undefined {
  return pod.spec?.containers?.find((c) => c.name === EDITOR_CONTAINER)?.ports?.[0]?.containerPort;
}

/** Where the editor answers: the Pod's IP (once its sandbox exists) and its container's port. */
export function podEndpoint(pod: V1Pod): { host: string; port: number } | undefined {
  const ip = podIp(pod);
  const port = containerPort(pod);
  return ip && port ? { host: ip, port } : undefined;
}

/** True while the editor's container runs (serving or not yet). */
export function isRunningContainer(pod: V1Pod): boolean {
  return editorStatus(pod)?.state?.running !== undefined;
}

/** The Pod's IP once it has one (its sandbox exists). */
export function podIp(pod: V1Pod): string | undefined {
  return pod.status?.podIP || undefined;
}

export function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true && editorStatus(pod)?.ready === true;
}

/** True once the Pod is being deleted or is over (Succeeded/Failed): it will not serve again. */
export function isOver(pod: V1Pod): boolean {
  return pod.metadata?.deletionTimestamp !== undefined || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/**
 * Why the editor's Pod does not serve, when Kubernetes says: not scheduled (with the scheduler's
 * message), its container waiting for a reason that needs someone (ImagePullBackOff), or its node
 * gone quiet (NodeNotReady: Ready False while the container still runs, as its kubelet last said).
 * Undefined while things merely progress.
 * `container` names the container that matters (the storage helper's, for its Pod).
 */
export function podProblem(pod: V1Pod, container = EDITOR_CONTAINER): EditorProblem | undefined {
  const conditions = pod.status?.conditions ?? [];
  const scheduled = conditions.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') {
    const message = scheduled.message || 'the Pod cannot be placed on any node';
    // Its claim not bound yet (the volume is still being made): the scheduler places the Pod once
    // it is, so this is a wait, not a lack of room (a start does not give up on it at once).
    if (/unbound immediate PersistentVolumeClaims/.test(message)) return { reason: 'WaitingForVolume', message };
    return { reason: scheduled.reason || 'Unschedulable', message };
  }
  const waiting = editorStatus(pod, container)?.state?.waiting;
  if (waiting?.reason && STUCK.has(waiting.reason)) {
    return { reason: waiting.reason, message: waiting.message || `the editor's container is waiting: ${waiting.reason}` };
  }
  // The editor's Pod prepares its volume first (an init container of the same image): stuck there, the editor never starts.
  const preparing = container === EDITOR_CONTAINER ? pod.status?.initContainerStatuses?.find((c) => STUCK.has(c.state?.waiting?.reason ?? '')) : undefined;
  if (preparing) {
    const reason = preparing.state!.waiting!.reason!;
    return { reason, message: preparing.state!.waiting!.message || `the container ${preparing.name} that prepares the editor's volume is waiting: ${reason}` };
  }
  const ready = conditions.find((c) => c.type === 'Ready');
  const status = editorStatus(pod, container);
  if (status?.state?.running !== undefined && ready?.status === 'False') {
    if (ready.reason && ready.reason !== 'ContainersNotReady') {
      return { reason: ready.reason, message: ready.message || `the Pod is not ready: ${ready.reason}` };
    }
    // The kubelet never says Ready False of a Pod whose container it reports ready: the node
    // controller does, when the node stops reporting (Kubernetes 1.20 leaves the reason empty and
    // records a NodeNotReady event). The container is as the kubelet last said: running.
    if (!ready.reason && status.ready) {
      return { reason: 'NodeNotReady', message: `node ${pod.spec?.nodeName ?? '(unknown)'} is not ready: the cluster marked the editor's Pod not ready; its container was running when the node's kubelet last reported` };
    }
  }
  if (pod.status?.reason === 'NodeLost' || pod.status?.reason === 'Evicted') {
    return { reason: pod.status.reason, message: pod.status.message || pod.status.reason };
  }
  return undefined;
}

/** How an editor's container ended: as a process's exit, the kubelet's reason (`Error`, `OOMKilled`), and which container it was. */
export type ContainerEnd = ExitInfo & { reason: string | undefined; containerId: string | undefined };

/**
 * A nonzero restart count, or a terminated container: the editor's run ended, how, and which
 * container it was. The editor runs once per Pod: a later run ends at once with
 * ALREADY_RAN_EXIT and is never the editor's exit; the kubelet keeps only the last two runs, so
 * after more restarts than that (a long outage of the API server) how the editor ended is unknown.
 */
export function editorEnded(pod: V1Pod): ContainerEnd | undefined {
  const status = editorStatus(pod);
  if (!status) return undefined;
  const current = status.state?.terminated;
  const last = status.restartCount > 0 ? status.lastState?.terminated : undefined;
  // Restarted at all: the editor's one run is over, even when the kubelet no longer says how.
  if (!current && !last && !(status.restartCount > 0)) return undefined;
  const runs = [last, current].filter((t) => t !== undefined);
  const editor = status.restartCount <= 1 ? runs.find((t) => t.exitCode !== ALREADY_RAN_EXIT) : undefined;
  if (editor) return { ...exitOf(editor.exitCode, editor.signal), reason: editor.reason || undefined, containerId: editor.containerID };
  // Only runs after the editor's are left: it ended, how is not known any more.
  return { code: null, signal: null, reason: undefined, containerId: runs[0]?.containerID };
}

/**
 * Where the log of the editor's own run is: the Pod's first container run, the current one until
 * the kubelet starts another (then `previous`), and out of reach after that (the kubelet keeps
 * two). `over` once that run has ended, with `until`: the latest time one of its lines can carry
 * (its end, whose second is all the status gives, plus that second). The Pod's status may lag the
 * kubelet: a run it still shows as the current one may already have been followed by the next, so
 * a reader of an ended run keeps only the lines up to `until`. Undefined before it started, or
 * once out of reach.
 */
export function editorRun(pod: V1Pod): { previous: boolean; over: boolean; until?: number } | undefined {
  const status = editorStatus(pod);
  if (!status) return undefined;
  const endOf = (finishedAt: Date | string | undefined) => {
    const at = finishedAt === undefined ? Number.NaN : new Date(finishedAt).getTime();
    return Number.isFinite(at) ? { until: Math.floor(at / 1000) * 1000 + 1000 } : {};
  };
  if (status.restartCount === 1) return { previous: true, over: true, ...endOf(status.lastState?.terminated?.finishedAt) };
  if (status.restartCount > 1) return undefined;
  if (status.state?.terminated) return { previous: false, over: true, ...endOf(status.state.terminated.finishedAt) };
  return status.state?.running ? { previous: false, over: false } : undefined;
}

/** True once the kubelet reports a container run after the one `endedId` names. */
export function restarted(pod: V1Pod, endedId: string | undefined): boolean {
  const status = editorStatus(pod);
  const current = status?.state?.running ? status.containerID : status?.state?.terminated?.containerID;
  return endedId !== undefined && current !== undefined && current !== endedId;
}

/** A container's exit as a process's: 128 + n is signal n (as a shell reports it), else the code. */
export function exitOf(exitCode: number, signal?: number): ExitInfo {
  const number = signal ?? (exitCode > 128 && exitCode < 128 + 65 ? exitCode - 128 : undefined);
  const name = number === undefined ? undefined : Object.entries(constants.signals).find(([, n]) => n === number)?.[0];
  return name ? { code: null, signal: name } : { code: exitCode, signal: null };
}
