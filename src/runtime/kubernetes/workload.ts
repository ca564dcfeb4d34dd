// A server's StatefulSet: scaled to one replica to run its editor and to zero to stop it, always
// applied whole (server-side apply states the entire object), and its Pod made again when a start
// with a new template finds one an earlier start left unplaced.
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { StartSpec } from '../interface.ts';
import type { ClusterApi } from './cluster-api.ts';
import { EDITOR_CONTAINER, UID_LABEL, type Names } from './names.ts';
import type { EditorExtras, Owner, ServerObjects } from './objects.ts';
import { editorStatus } from './pod-state.ts';

/** The label the StatefulSet controller gives each Pod: the template revision it was made from. */
const REVISION_LABEL = 'controller-revision-hash';

interface Launch {
  port: number;
  resources?: StartSpec['resources'];
  uid?: string;
  /** StartSpec's image and env (objects.ts, EditorExtras). */
  extras?: EditorExtras;
}

export interface WorkloadDeps {
  client: ClusterApi;
  names: Names;
  objects: ServerObjects;
  owner(name: string): Promise<Owner>;
  /** The server's editor Pod in the runtime's view, even while it ends. */
  lastEditorPod(name: string): V1Pod | undefined;
  log(level: 'info' | 'warn', message: string): void;
}

export class Workload {
  readonly #deps: WorkloadDeps;
  /** The port and resources of the last start, kept for a scale to zero (an apply states the whole object). */
  readonly #launched = new Map<string, Launch>();

  constructor(deps: WorkloadDeps) {
    this.#deps = deps;
  }

  async scale(name: string, replicas: 0 | 1, launch?: Launch): Promise<void> {
    const { client, names, objects } = this.#deps;
    const owner = await this.#deps.owner(name);
    if (launch) this.#launched.set(name, launch);
    const last = this.#launched.get(name) ?? this.#fromCluster(name);
    if (!last) {
      // Nothing known of it in this run and no Pod to read: scale the StatefulSet there is, if any.
      if ((await client.read('apps/v1', 'StatefulSet', names.object(name))) === undefined) return;
      await client.scale(names.object(name), replicas);
      return;
    }
    await client.apply(objects.statefulSet(name, owner, replicas, last.port, last.resources, last.uid, last.extras));
  }

  /** The port (and resources) the server's Pod runs with, when the runtime's view has it. */
  #fromCluster(name: string): Launch | undefined {
    const pod = this.#deps.lastEditorPod(name);
    const container = pod?.spec?.containers?.find((c) => c.name === EDITOR_CONTAINER);
    const port = container?.ports?.[0]?.containerPort;
    if (!port) return undefined;
    // Its image and variables as they are (a scale to zero keeps the template as it was).
    const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value ?? '']));
    const extras = { image: container?.image, env };
    return { port, resources: container?.resources as StartSpec['resources'], uid: pod?.metadata?.labels?.[UID_LABEL], extras };
  }

  /**
   * The StatefulSet's Pod as an earlier start made it, when its editor never ran (not placed, its
   * image not pulled) and the template has changed since (other resources, another image): the
   * StatefulSet controller waits for that Pod to be Ready before it replaces anything
   * (kubernetes/kubernetes#67250), so the new start would wait behind it forever. It is deleted,
   * and the StatefulSet makes it again from the template just applied. A Pod whose editor ran is
   * never touched here.
   */
  async replaceUnstarted(name: string, pod: V1Pod | undefined): Promise<void> {
    if (!pod || pod.status?.phase !== 'Pending' || editorStatus(pod)?.state?.running || editorStatus(pod)?.state?.terminated) return;
    const revision = await this.#updateRevision(name);
    if (!revision || pod.metadata?.labels?.[REVISION_LABEL] === revision) return;
    this.#deps.log('info', `the Pod ${pod.metadata?.name} of ${name} never ran and has an earlier template: it is made again from the new one`);
    await this.#deps.client.delete('v1', 'Pod', pod.metadata!.name!, { uid: pod.metadata!.uid!, graceSeconds: 0 });
  }

  /** The StatefulSet's current template revision, once its controller has seen the last change (a bounded wait). */
  async #updateRevision(name: string): Promise<string | undefined> {
    const deadline = Date.now() + 5000;
    while (true) {
      const set = await this.#deps.client.read<V1StatefulSet>('apps/v1', 'StatefulSet', this.#deps.names.object(name));
      if (!set) return undefined;
      if ((set.status?.observedGeneration ?? 0) >= (set.metadata?.generation ?? 0)) return set.status?.updateRevision;
      if (Date.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
