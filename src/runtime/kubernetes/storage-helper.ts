// The storage helper Pod (`<prefix><name>-storage`): a short-lived Pod that mounts a server's
// volume while no editor runs, for a storage call made then (the controller makes none: it waits
// for the editor, see storageDeferred). Started when a call needs it, ended a minute after its
// last use or as the editor starts: one Pod on the volume at a time.
import type { V1Pod } from '@kubernetes/client-node';
import { StorageUnavailable } from '../interface.ts';
import { messageOf } from './client.ts';
import type { ClusterApi } from './cluster-api.ts';
import { HELPER_CONTAINER, type Names } from './names.ts';
import type { Owner, ServerObjects } from './objects.ts';
import { isOver, podIp, podProblem } from './pod-state.ts';

/** How long a helper Pod waits for more storage work before it goes. */
const HELPER_IDLE_MS = 60_000;
/** How long a helper Pod may stay Unschedulable before a storage call says so (StorageUnavailable). */
const HELPER_PLACE_MS = 10_000;

export interface HelperDeps {
  client: ClusterApi;
  names: Names;
  objects: ServerObjects;
  /** The server's helper Pod in the runtime's view of its Pods, if there is one. */
  helperPod(name: string): V1Pod | undefined;
  owner(name: string): Promise<Owner>;
  ensureClaim(name: string): Promise<unknown>;
  /** How long a helper Pod may take to run (image pull, scheduling). */
  helperTimeoutMs?: number;
}

export class StorageHelpers {
  readonly #deps: HelperDeps;
  /** When each helper Pod goes unless used again: a stopped server keeps no Pod for long. */
  readonly #timers = new Map<string, NodeJS.Timeout>();

  constructor(deps: HelperDeps) {
    this.#deps = deps;
  }

  /** The server's helper Pod, started when missing, once it runs; it goes a minute after its last use. */
  async use(name: string): Promise<string> {
    const pod = await this.#helper(name);
    this.#releaseLater(name);
    return pod;
  }

  /**
   * Ends the helper Pod as the editor starts. Not waited for (a Pod's deletion takes seconds):
   * its work is done, it only sleeps, and a ReadWriteOnce volume may be mounted by two Pods of
   * one node; on another node the editor's Pod waits for the volume by itself.
   */
  async release(name: string): Promise<void> {
    clearTimeout(this.#timers.get(name));
    this.#timers.delete(name);
    const { client, names } = this.#deps;
    // From the runtime's view of its Pods: a server that never had a helper costs no request.
    const pod = this.#deps.helperPod(name);
    if (!pod || names.serverOf(pod.metadata) !== name) return;
    await client.delete('v1', 'Pod', names.storagePod(name), { uid: pod.metadata?.uid, graceSeconds: 0 });
  }

  #releaseLater(name: string): void {
    clearTimeout(this.#timers.get(name));
    const timer = setTimeout(() => {
      this.#timers.delete(name);
      this.release(name).catch(() => undefined);
    }, HELPER_IDLE_MS);
    timer.unref();
    this.#timers.set(name, timer);
  }

  /** Forgets the helpers' timers (the service stops; a helper left behind ends by its own deadline). */
  dispose(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  /** The helper Pod, started when missing, once it runs. */
  async #helper(name: string): Promise<string> {
    const { client, names, objects } = this.#deps;
    const podName = names.storagePod(name);
    const deadline = Date.now() + (this.#deps.helperTimeoutMs ?? 120_000);
    const placeBy = Date.now() + HELPER_PLACE_MS;
    while (true) {
      let pod = await client.read<V1Pod>('v1', 'Pod', podName);
      if (pod && names.serverOf(pod.metadata) !== name) throw new Error(`a Pod named ${podName} that this service did not make is in the way: delete or rename it`);
      if (pod && isOver(pod)) {
        await client.delete('v1', 'Pod', podName, { uid: pod.metadata?.uid, graceSeconds: 0 });
        pod = undefined;
      }
      if (!pod) {
        await this.#deps.ensureClaim(name);
        await client.apply(objects.storagePod(name, await this.#deps.owner(name))).catch((error) => {
          // Still being deleted: the next round makes it.
          if (!/being deleted|already exists|object is being deleted/i.test(messageOf(error))) throw error;
        });
      } else if (pod.status?.phase === 'Running' && podIp(pod)) {
        return podName;
      } else {
        // Its image cannot be had (or its container made): said at once, and the controller asks
        // again. Not placed (or its claim not bound yet, WaitingForVolume): after a while.
        const problem = podProblem(pod, HELPER_CONTAINER);
        const waits = problem?.reason === 'Unschedulable' || problem?.reason === 'WaitingForVolume';
        if (problem && (!waits || Date.now() > placeBy)) {
          throw new StorageUnavailable({ reason: problem.reason, message: `the Pod ${podName} that mounts the server's volume cannot run: ${problem.message}` });
        }
      }
      if (Date.now() > deadline) throw new Error(`the storage helper ${podName} did not run within ${(this.#deps.helperTimeoutMs ?? 120_000) / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
