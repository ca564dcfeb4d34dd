// Which workspaces the target holds as they are now, without a snapshot to find out: a workspace
// made or populated (a source applied) changes its WorkspaceReady condition, and that condition,
// with the server's uid, is the mark a snapshot is taken at. A server whose mark differs from the
// one its last snapshot was taken at is owed one, whether or not its editor ever runs.
import type { EditorServer } from '../manifests/types.ts';

/** The server's workspace is made and its source (if any) applied: what is there now is worth keeping before any editor runs. */
export function workspacePopulated(server: EditorServer): boolean {
  const status = server.status;
  const ready = status?.conditions?.find((c) => c.type === 'WorkspaceReady');
  if (ready?.status !== 'True' || status?.reason === 'PopulatingWorkspace') return false;
  const source = server.spec.workspace?.source;
  return !((source?.git || source?.archive) && ready.reason === 'Created');
}

/** The server's populated workspace as a mark; undefined while it is not populated (or has no uid). */
export function populatedMark(server: EditorServer): string | undefined {
  const uid = server.metadata.uid;
  if (!uid || !workspacePopulated(server)) return undefined;
  const ready = server.status?.conditions?.find((c) => c.type === 'WorkspaceReady');
  return JSON.stringify([uid, ready?.reason ?? null, ready?.lastTransitionTime ?? null, ready?.message ?? null]);
}

export class WorkspaceMarks {
  /** The uid of each server's latest snapshot at the target (from the first look at it). */
  readonly #uids = new Map<string, string>();
  /** The mark each server's last snapshot was taken at. */
  readonly #kept = new Map<string, string>();
  /** The mark a snapshot was last asked for at (so one change asks once). */
  readonly #asked = new Map<string, string>();

  /** The target holds a snapshot of the server's files under this uid. */
  keptUid(name: string, uid: string): void {
    this.#uids.set(name, uid);
  }

  /**
   * The mark the server is owed a snapshot at, or undefined. The first look at a server whose uid
   * the target holds takes its snapshot to be of the workspace as it is (a restart on the same disk).
   * With `asking`, each mark is answered once.
   */
  owed(name: string, server: EditorServer | undefined, asking = false): string | undefined {
    const mark = server && populatedMark(server);
    if (mark === undefined) return undefined;
    const kept = this.#kept.get(name);
    if (kept === undefined && this.#uids.get(name) === server!.metadata.uid) {
      this.#kept.set(name, mark);
      return undefined;
    }
    if (kept === mark || (asking && this.#asked.get(name) === mark)) return undefined;
    if (asking) this.#asked.set(name, mark);
    return mark;
  }

  /** A snapshot that began at `mark` (the server's mark then, if any) is committed. */
  taken(name: string, uid: string, mark: string | undefined): void {
    this.#uids.set(name, uid);
    if (mark !== undefined) this.#kept.set(name, mark);
  }

  forget(name: string): void {
    for (const map of [this.#uids, this.#kept, this.#asked]) map.delete(name);
  }
}
