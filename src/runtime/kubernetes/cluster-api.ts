// What the Kubernetes runtime asks of the API server, and nothing more: the seam between the
// runtime's logic and the cluster. The service's implementation is KubeClient (client.ts, over
// @kubernetes/client-node); tests give an in-memory cluster of their own.
import type { Readable, Writable } from 'node:stream';
import type { ListResult, ListWatchTransport } from './list-watch.ts';
import type { KubeObject } from './objects.ts';

/** An object as the API server answers it: the least the runtime reads of one. */
export interface ClusterObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string> };
}

export interface ExecResult {
  /** The command's exit code (0: success). */
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** Which of a container's logs, and how much of it. */
export interface LogOptions {
  /** Keep the stream open for what the container prints next, until it ends (else: what there is now). */
  follow: boolean;
  /** The log of the container's previous run (the kubelet keeps one), not its current one. */
  previous?: boolean;
  /** Only the last lines. */
  tailLines?: number;
}

export interface KubeletSummary {
  pods?: Array<{
    podRef?: { name?: string; namespace?: string; uid?: string };
    containers?: Array<{ name?: string; startTime?: string; cpu?: { usageNanoCores?: number }; memory?: { workingSetBytes?: number } }>;
  }>;
}

export interface ClusterApi {
  /** The namespace every call is about. */
  readonly namespace: string;
  /** Server-side apply of the whole object as this service states it; the object as stored. */
  apply<T extends ClusterObject>(object: KubeObject): Promise<T>;
  /** The object, or undefined when there is none. */
  read<T extends ClusterObject>(apiVersion: string, kind: string, name: string): Promise<T | undefined>;
  /**
   * Deletes the object; with `uid`, only that very object (a precondition the API server checks).
   * False when there was none (or it was another object of that name).
   */
  delete(apiVersion: string, kind: string, name: string, options?: { uid?: string; graceSeconds?: number; propagation?: 'Background' | 'Foreground' }): Promise<boolean>;
  /** Sets a StatefulSet's replicas (the scale subresource), leaving the rest of it as it is. */
  scale(name: string, replicas: number): Promise<void>;
  list<T extends ClusterObject>(apiVersion: string, kind: string, labelSelector: string): Promise<ListResult<T>>;
  /** A list-then-watch transport over one collection (path like /api/v1/namespaces/x/pods). */
  transport<T extends ClusterObject>(apiVersion: string, kind: string, path: string, labelSelector: string): ListWatchTransport<T>;
  /**
   * Runs a command in a container and collects its output; `stdin` is written whole and not
   * closed. With `stdout` (`stderr`), the command's output (error output) is written there as it
   * comes (not collected).
   */
  exec(pod: string, container: string, command: string[], options?: { stdin?: Readable; stdout?: Writable; stderr?: Writable; signal?: AbortSignal }): Promise<ExecResult>;
  /**
   * A container's log, each line after its RFC 3339 time, given to `onText` as it comes; resolves
   * once the log is read (followed: once the container ends), or the signal aborts. Never throws:
   * a log that cannot be read gives nothing.
   */
  containerLog(pod: string, container: string, options: LogOptions, onText: (text: string) => void, signal: AbortSignal): Promise<void>;
  /** The kubelet's summary of a node (CPU and memory by Pod and container), through the API server. */
  nodeSummary(node: string): Promise<KubeletSummary>;
}
