// How the Kubernetes runtime's editors ended, by Pod uid: what state() answers for an editor
// whose container has ended (a crash, or a stop of this runtime's), also once its Pod is gone,
// and the editor's last output, read before its Pod went. Bounded: the oldest are forgotten, as
// the process runtime forgets old exits.
import type { EditorEndpoint, ExitInfo, RuntimeRef } from '../interface.ts';

/** The most endings remembered. */
const KEPT = 1024;

export interface Ending {
  /** The server whose editor it was. */
  name: string;
  ref: RuntimeRef;
  endpoint: EditorEndpoint | undefined;
  /** How its container ended, once seen. */
  exit: ExitInfo | undefined;
  /** The kubelet's reason for that end (`Error`, `OOMKilled`, `Completed`). */
  reason?: string;
  /** The container that ended (the kubelet may have started another in the Pod since). */
  containerId?: string;
  /** Stopped by this runtime (not a crash). */
  stopped: boolean;
  /** True once the Pod object is gone. */
  gone: boolean;
  /** The editor's last output (its log lines, with their times), kept once its Pod goes. */
  output?: string;
  /** The clean-up after a crash (its StatefulSet to zero, its Pod deleted), while it runs. */
  cleanup?: Promise<void>;
}

export class Endings {
  readonly #byUid = new Map<string, Ending>();

  get(uid: string): Ending | undefined {
    return this.#byUid.get(uid);
  }

  has(uid: string): boolean {
    return this.#byUid.has(uid);
  }

  add(uid: string, ending: Ending): Ending {
    this.#byUid.delete(uid);
    this.#byUid.set(uid, ending);
    if (this.#byUid.size > KEPT) this.#byUid.delete(this.#byUid.keys().next().value!);
    return ending;
  }

  delete(uid: string): void {
    this.#byUid.delete(uid);
  }

  /** The uids of server `name`'s editors that have ended so far. */
  uidsOf(name: string): Set<string> {
    return new Set([...this.#byUid].filter(([, e]) => e.name === name).map(([uid]) => uid));
  }

  /** Server `name`'s latest editor that ended on its own (not stopped), other than those in `before`. */
  crashedSince(name: string, before: Set<string>): Ending | undefined {
    return [...this.#byUid].reverse().find(([uid, e]) => e.name === name && !e.stopped && !before.has(uid))?.[1];
  }

  /** What was kept of the output of server `name`'s last editor that ended, and the uid of its Pod. */
  lastOutput(name: string): { uid: string; text: string } | undefined {
    const [uid, last] = [...this.#byUid].reverse().find(([, e]) => e.name === name) ?? [];
    return uid !== undefined && last?.output !== undefined ? { uid, text: last.output } : undefined;
  }

  /** Resolves once the clean-ups after server `name`'s crashed editors have been asked for. */
  async cleanedUp(name: string): Promise<void> {
    await Promise.all([...this.#byUid.values()].filter((e) => e.name === name && e.cleanup).map((e) => e.cleanup));
  }

  /** Forgets server `name`'s endings (its objects are removed). */
  forget(name: string): void {
    for (const [uid, e] of this.#byUid) if (e.name === name) this.#byUid.delete(uid);
  }
}
