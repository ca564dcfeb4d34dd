// Changes that came through the other doors: a manifest edited, created or removed by hand in the
// manifests folder, or a cluster's EditorServer object changed by someone else (kubectl). The
// source's watch already tells these from the service's own writes (it reports only someone else's
// change); this sits in front of the controller's listener, compares the manifest now there with
// the spec the controller last read, and records what changed: the names of the spec fields (the
// values only of `running` and `port`: settings may hold what is not for a log).
import type { ServerIndex } from '../index/server-index.ts';
import type { ManifestEvents, ManifestSource } from '../manifests/source.ts';
import { parseManifest } from '../manifests/store.ts';
import type { EditorServer } from '../manifests/types.ts';
import { canonicalJson, type AuditDoor, type AuditInput } from './entry.ts';

/** The spec fields whose value is said in the entry; every other field only by name. */
const SHOWN_VALUES = new Set(['running', 'port']);

export interface ManifestRecorderDeps {
  index: ServerIndex;
  /** The source's text of a manifest as it is now; undefined when it is gone. */
  textOf(name: string): Promise<string | undefined>;
  door: Extract<AuditDoor, 'manifest' | 'cluster'>;
  /** Who is named: by default `file` for the folder and `cluster` for the objects (`git` for a GitOps mirror's writes). */
  actor?: string;
  record(input: AuditInput): void;
  log(message: string): void;
}

/** What changed between two specs, for the entry's detail: "running: false → true; extensions". */
export function specChanges(before: EditorServer['spec'] | undefined, after: EditorServer['spec']): string[] {
  const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after)])].sort();
  const changes: string[] = [];
  for (const key of keys) {
    const a = (before as unknown as Record<string, unknown> | undefined)?.[key];
    const b = (after as unknown as Record<string, unknown>)[key];
    if (canonicalJson(a ?? null) === canonicalJson(b ?? null)) continue;
    changes.push(SHOWN_VALUES.has(key) ? `${key}: ${JSON.stringify(a ?? null)} → ${JSON.stringify(b ?? null)}` : key);
  }
  return changes;
}

/** Records one reported change of `name`, once its manifest is read. */
export class ManifestRecorder {
  readonly #deps: ManifestRecorderDeps;
  /** The last state recorded per name, so the same change reported twice (an event and the folder scan) is one entry. */
  readonly #recorded = new Map<string, string>();

  constructor(deps: ManifestRecorderDeps) {
    this.#deps = deps;
  }

  /** Someone else changed `name`: what the controller knew is taken now, before its reconcile reads the change. */
  changed(name: string): Promise<void> {
    const before = this.#deps.index.serverNamed(name);
    return this.#compare(name, before).catch((error) => this.#deps.log(`audit trail: reading the changed manifest ${name} failed: ${(error as Error).message}`));
  }

  async #compare(name: string, before: EditorServer | undefined): Promise<void> {
    const { door } = this.#deps;
    const base = { actor: this.#deps.actor ?? (door === 'manifest' ? 'file' : 'cluster'), door, server_id: before?.metadata.uid ?? null, server_name: name };
    const text = await this.#deps.textOf(name);
    if (text === undefined) {
      // Gone. A server the API or a deletion mark deleted loses its file at the end: not a hand's act.
      if (!before || before.metadata.deletionTimestamp) return;
      this.#once(name, 'gone', { ...base, action: 'delete', outcome: 'ok', detail: door === 'manifest' ? 'the manifest was removed' : 'the object was deleted' });
      return;
    }
    const read = parseManifest(name, text);
    if (read.kind !== 'ok') {
      const problems = read.kind === 'invalid' ? read.errors.length : 0;
      this.#once(name, `invalid:${text.length}:${problems}`, {
        ...base, action: 'edit', outcome: 'refused', code: 'MANIFEST_INVALID',
        detail: `the manifest is invalid (${problems} problem${problems === 1 ? '' : 's'}, see GET /servers/{id}/events): the server is left as it was`,
      });
      return;
    }
    const after = read.server;
    const state = canonicalJson({ spec: after.spec, deleting: Boolean(after.metadata.deletionTimestamp) });
    if (!before) {
      this.#once(name, state, { ...base, server_id: after.metadata.uid ?? null, action: 'create', outcome: 'ok', detail: `running: ${after.spec.running === true}` });
      return;
    }
    if (after.metadata.deletionTimestamp && !before.metadata.deletionTimestamp) {
      this.#once(name, state, { ...base, action: 'delete', outcome: 'ok', detail: 'a deletion mark was set' });
      return;
    }
    const changes = specChanges(before.spec, after.spec);
    if (changes.length === 0) return;
    this.#once(name, state, { ...base, action: 'edit', outcome: 'ok', detail: `spec: ${changes.join('; ')}` });
  }

  #once(name: string, state: string, input: AuditInput): void {
    if (this.#recorded.get(name) === state) return;
    this.#recorded.set(name, state);
    this.#deps.record(input);
  }
}

/**
 * Puts the recorder in front of the listener the controller gives the source's watch: the
 * controller still hears of every change as before; the recorder hears of the same ones.
 */
export function auditManifestWatch(source: Pick<ManifestSource, 'watch'>, recorder: ManifestRecorder): void {
  const watch = source.watch.bind(source);
  source.watch = async (events: ManifestEvents, log: (message: string) => void) => {
    // What a source reports while its watch starts (a cluster's objects listed before it) is what
    // was there already, not a change: only what comes once it watches is recorded.
    let watching = false;
    const started = await watch({
      changed: (name) => {
        if (watching) void recorder.changed(name);
        events.changed(name);
      },
      everything: () => events.everything(),
      known: () => events.known(),
    }, log);
    watching = true;
    return started;
  };
}
