// The runtime's few conversations with the API server (cluster-api.ts), over
// @kubernetes/client-node: apply (server-side, this service's field manager), read, delete with
// preconditions, list, watch (as the transport of the project's own ListWatch), exec with
// bounded output, the log API, and the kubelet's summary through the API server.
import { PassThrough, Writable, type Readable } from 'node:stream';
import { fetch, type Dispatcher } from 'undici';
import {
  AppsV1Api, CoreV1Api, Exec, HttpMethod, RequestContext, setHeaderOptions, KubeConfig, KubernetesObjectApi, PatchStrategy, Watch,
  type KubernetesObject, type V1Status,
} from '@kubernetes/client-node';
import type { ClusterApi, ClusterObject, ExecResult, KubeletSummary, LogOptions } from './cluster-api.ts';
import { poolConnections } from './connection-pool.ts';
import { WatchFailure, type ListResult, type ListWatchTransport, type WatchEvent } from './list-watch.ts';
import { FIELD_MANAGER } from './names.ts';
import type { KubeObject } from './objects.ts';

/** The HTTP status of a failed API call, when it had one. */
export function statusOf(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown };
  return typeof e?.code === 'number' ? e.code : typeof e?.statusCode === 'number' ? e.statusCode : undefined;
}

/** The API server's own words for a failed call (its Status message), else the error's. */
export function messageOf(error: unknown): string {
  const body = (error as { body?: unknown })?.body;
  const parsed = typeof body === 'string' ? (() => { try { return JSON.parse(body); } catch { return undefined; } })() : body;
  return (parsed as V1Status | undefined)?.message ?? (error as Error)?.message ?? String(error);
}

export type { ExecResult, KubeletSummary } from './cluster-api.ts';

/** The most output one exec keeps: what a storage call reads is small (settings, a list). */
const MAX_EXEC_OUTPUT = 8 * 1024 * 1024;

export class KubeClient implements ClusterApi {
  readonly config: KubeConfig;
  readonly namespace: string;
  readonly #objects: KubernetesObjectApi;
  readonly #core: CoreV1Api;
  readonly #apps: AppsV1Api;

  constructor(namespace: string, kubeconfig?: string) {
    this.config = new KubeConfig();
    if (kubeconfig) this.config.loadFromFile(kubeconfig);
    else this.config.loadFromDefault();
    poolConnections(this.config);
    this.namespace = namespace;
    this.#objects = KubernetesObjectApi.makeApiClient(this.config);
    this.#core = this.config.makeApiClient(CoreV1Api);
    this.#apps = this.config.makeApiClient(AppsV1Api);
  }

  /** Server-side apply of the whole object as this service states it. */
  async apply<T extends ClusterObject>(object: KubeObject): Promise<T> {
    return (await this.#objects.patch(object as KubernetesObject, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply)) as T;
  }

  /** The object, or undefined when there is none. */
  async read<T extends ClusterObject>(apiVersion: string, kind: string, name: string): Promise<T | undefined> {
    try {
      return (await this.#objects.read({ apiVersion, kind, metadata: { name, namespace: this.namespace } })) as T;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /**
   * Deletes the object; with `uid`, only that very object (a precondition the API server checks).
   * False when there was none (or it was another object of that name).
   */
  async delete(apiVersion: string, kind: string, name: string, options: { uid?: string; graceSeconds?: number; propagation?: 'Background' | 'Foreground' } = {}): Promise<boolean> {
    try {
      await this.#objects.delete(
        { apiVersion, kind, metadata: { name, namespace: this.namespace } }, undefined, undefined, options.graceSeconds, undefined,
        options.propagation ?? 'Background', options.uid ? { preconditions: { uid: options.uid } } : undefined,
      );
      return true;
    } catch (error) {
      if (statusOf(error) === 404 || statusOf(error) === 409) return false;
      throw error;
    }
  }

  /** Sets a StatefulSet's replicas (the scale subresource), leaving the rest of it as it is. */
  async scale(name: string, replicas: number): Promise<void> {
    await this.#apps.patchNamespacedStatefulSetScale(
      { name, namespace: this.namespace, body: { spec: { replicas } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  async list<T extends ClusterObject>(apiVersion: string, kind: string, labelSelector: string): Promise<ListResult<T>> {
    const list = await this.#objects.list<T & KubernetesObject>(apiVersion, kind, this.namespace, undefined, undefined, undefined, undefined, labelSelector);
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  /** A list-then-watch transport over one collection (path like /api/v1/namespaces/x/pods). */
  transport<T extends ClusterObject>(apiVersion: string, kind: string, path: string, labelSelector: string): ListWatchTransport<T> {
    const watcher = new Watch(this.config);
    return {
      list: () => this.list<T>(apiVersion, kind, labelSelector),
      watch: (resourceVersion, onEvent, signal) => new Promise<void>((resolve, reject) => {
        let controller: AbortController | undefined;
        const stop = () => controller?.abort();
        signal.addEventListener('abort', stop, { once: true });
        const done = (error: unknown) => {
          signal.removeEventListener('abort', stop);
          if (!error || signal.aborted) resolve();
          else reject(new WatchFailure(messageOf(error), statusOf(error)));
        };
        // The API server ends each watch within 20 s (client-node gives up after 30 s of silence); the loop opens the next from the version it had.
        const params = { labelSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 20 };
        watcher.watch(path, params, (type, object) => onEvent({ type, object } as WatchEvent<T>), done)
          .then((c) => {
            controller = c;
            if (signal.aborted) c.abort();
          }, done);
      }),
    };
  }

  /**
   * Runs a command in a container and collects its output (at most 8 MiB). `stdin` is written
   * whole and not closed (the v4 exec protocol cannot): commands read exactly its length. With
   * `stdout`, the output goes there as it comes, however much there is (a volume's files as a tar);
   * with `stderr`, the error output likewise (a command's lines as they come).
   */
  async exec(pod: string, container: string, command: string[], options: { stdin?: Readable; stdout?: Writable; stderr?: Writable; signal?: AbortSignal } = {}): Promise<ExecResult> {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let kept = 0;
    const sink = (into: Buffer[]) => new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if ((kept += chunk.length) <= MAX_EXEC_OUTPUT) into.push(chunk);
        callback();
      },
    });
    return new Promise<ExecResult>((resolve, reject) => {
      let socket: { close(): void } | undefined;
      const abort = () => {
        socket?.close();
        reject(options.signal?.reason ?? new Error('aborted'));
      };
      if (options.signal?.aborted) return abort();
      options.signal?.addEventListener('abort', abort, { once: true });
      const finish = (status: V1Status) => {
        options.signal?.removeEventListener('abort', abort);
        const exitCause = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
        const code = status.status === 'Success' ? 0 : exitCause !== undefined ? Number(exitCause) : -1;
        const stderrText = Buffer.concat(stderr).toString('utf8');
        if (code === -1) reject(new Error(`exec in ${pod} failed: ${status.message ?? status.reason ?? 'unknown'}${stderrText ? `: ${stderrText.trim()}` : ''}`));
        else resolve({ code, stdout: Buffer.concat(stdout), stderr: stderrText });
      };
      // The client closes the connection when stdin ends, before the command has read it all and
      // said how it ended: the bytes go through a stream that never ends, ended with the exec.
      const stdin = options.stdin ? new PassThrough() : null;
      if (stdin) options.stdin!.pipe(stdin, { end: false });
      new Exec(this.config).exec(this.namespace, pod, container, command, options.stdout ?? sink(stdout), options.stderr ?? sink(stderr), stdin, false, (status) => {
        stdin?.destroy();
        finish(status);
      })
        .then((ws) => {
          socket = ws;
          ws.on('close', () => setTimeout(() => finish({ status: 'Failure', message: 'the connection closed without a status' }), 1000).unref());
          if (options.signal?.aborted) ws.close();
        }, (error) => {
          options.signal?.removeEventListener('abort', abort);
          reject(new Error(`exec in ${pod} failed: ${messageOf(error)}`));
        });
    });
  }

  /**
   * A container's log (each line after its RFC 3339 time), its text given to `onText` as it
   * comes, until it is read (followed: the container ends) or the signal aborts; resolves then,
   * and never throws. (Fetched here rather than by the client's Log, whose stream errors
   * unhandled when aborted.)
   */
  async containerLog(pod: string, container: string, options: LogOptions, onText: (text: string) => void, signal: AbortSignal): Promise<void> {
    const url = new URL(`${this.config.getCurrentCluster()?.server ?? ''}/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods/${encodeURIComponent(pod)}/log`);
    url.search = new URLSearchParams({
      container, timestamps: 'true',
      ...(options.follow ? { follow: 'true' } : {}),
      ...(options.previous ? { previous: 'true' } : {}),
      ...(options.tailLines !== undefined ? { tailLines: String(options.tailLines) } : {}),
    }).toString();
    try {
      const context = new RequestContext(url.toString(), HttpMethod.GET);
      await this.config.applySecurityAuthentication(context);
      const response = await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher() as Dispatcher, signal });
      if (!response.ok || !response.body) {
        await response.body?.cancel();
        return;
      }
      const decoder = new TextDecoder();
      for await (const chunk of response.body) onText(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch {
      // Aborted, or the connection ended: the caller decides whether to read again.
    }
  }

  /** The kubelet's summary of a node (CPU and memory by Pod and container), through the API server. */
  async nodeSummary(node: string): Promise<KubeletSummary> {
    const text = await this.#core.connectGetNodeProxyWithPath({ name: node, path: 'stats/summary' });
    return (typeof text === 'string' ? JSON.parse(text) : text) as KubeletSummary;
  }
}
