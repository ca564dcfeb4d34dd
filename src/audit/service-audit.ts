// The audit trail as a part of the service: its file in the data folder (audit/), the recorders of
// each door (the API's middleware, the controller's acts read from the index, the manifests folder
// or the cluster's objects), its routes, its section of GET /health, and its copies at the
// persistence target (archive.ts). service-parts.ts builds it with one call; everything else is here.
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import type { RequestHandler, Router } from 'express';
import type { ServerAccess } from '../api/access.ts';
import type { HealthSection } from '../core/health-section.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { ManifestSource } from '../manifests/source.ts';
import { apiRecorder, doorOf, type RouteAction } from './api-recorder.ts';
import { AuditArchive, type ArchiveStore } from './archive.ts';
import { AuditLog } from './audit-log.ts';
import { recordControllerActs } from './controller-recorder.ts';
import type { AuditInput } from './entry.ts';
import { CURRENT_FILE } from './files.ts';
import { auditManifestWatch, ManifestRecorder } from './manifest-recorder.ts';
import { auditRouter } from './routes.ts';

/** How long a shutdown waits for the last copy of the trail to the target. */
const FINAL_COPY_MS = 5000;

export interface AuditDeps {
  dataDir: string;
  index: ServerIndex;
  access: ServerAccess;
  /** The manifests' source; `door` says which it is. */
  source: Pick<ManifestSource, 'watch'> & { textOf(name: string): Promise<string | undefined> };
  door: 'manifest' | 'cluster';
  /** The persistence target's store, when one is set: the trail's files are copied there. */
  target?: ArchiveStore;
  /** How often the file being written is copied to the target (the snapshot interval). */
  copyEveryMs: () => number;
  log: (message: string) => void;
}

export interface AuditPart {
  log: AuditLog;
  /** Records a change the recorders here do not see. */
  record(input: AuditInput): void;
  /** Records a change a request made, its actor and door taken from the request (for a route that records by itself). */
  recordFor(req: { headers: IncomingHttpHeaders }, input: Omit<AuditInput, 'actor' | 'door'> & { door?: AuditInput['door'] }): void;
  /**
   * Has the API's recorder record another route, as it does the built-in ones: once answered, with
   * the outcome and error code (`recordRoute({ method: 'POST', path: /^\/servers\/([^/]+)\/share\/?$/,
   * action: 'share' })`; the first group is the server's id). Call it before the service serves.
   */
  recordRoute(route: RouteAction): void;
  /** The GitOps mirror's `enqueue`: records what its write changed (actor `git`), then queues the name. */
  gitEnqueue(enqueue: (name: string) => void): (name: string) => void;
  middleware: RequestHandler;
  router: Router;
  health: HealthSection;
  /** Stops following, copies the current file a last time, and closes the file. */
  close(): Promise<void>;
}

/** Builds the trail (a fresh data folder first takes it back from the target) and starts recording. */
export async function buildAudit(deps: AuditDeps): Promise<AuditPart> {
  const dir = join(deps.dataDir, 'audit');
  const archive = deps.target ? new AuditArchive(deps.target, deps.log) : undefined;
  await archive?.bringBack(dir);
  // A rotated file is kept at the target, and the copy of the file being written starts again (it is empty now).
  const onRotated = (path: string) => {
    void archive?.copy(path);
    void archive?.copy(join(dir, CURRENT_FILE));
  };
  const log = AuditLog.open({ dir, log: deps.log, onRotated });
  const record = (input: AuditInput) => {
    try {
      log.record(input);
    } catch (error) {
      // A full disk must not turn a person's action into an error: the log says the entry is missing.
      deps.log(`audit trail: an entry could not be written (${input.action} of ${input.server_name ?? 'no server'} by ${input.actor}): ${(error as Error).message}`);
    }
  };
  const offController = recordControllerActs({ index: deps.index, record });
  const recorder = (actor?: string) => new ManifestRecorder({ index: deps.index, textOf: (name) => deps.source.textOf(name), door: deps.door, record, log: deps.log, ...(actor ? { actor } : {}) });
  auditManifestWatch(deps.source, recorder());
  // A GitOps mirror writes manifests as the service (its writes are no news to the watch): what it wrote is looked at when it queues the name.
  const fromGit = recorder('git');
  const actorOf: Parameters<typeof apiRecorder>[0]['actorOf'] = (headers) => {
    const who = deps.access.requester(headers);
    return who.local ? 'local' : (who.user ?? 'unknown');
  };
  const extraRoutes: RouteAction[] = [];
  let copied = log.state().last_seq;
  let timer: NodeJS.Timeout | undefined;
  const copyCurrent = async () => {
    const seq = log.state().last_seq;
    if (!archive || seq === copied) return;
    log.flush();
    await archive.copy(join(dir, CURRENT_FILE));
    copied = seq;
  };
  let closed = false;
  const schedule = () => {
    if (!archive || closed) return;
    timer = setTimeout(() => void copyCurrent().finally(schedule), deps.copyEveryMs());
    timer.unref();
  };
  schedule();
  return {
    log,
    record,
    recordFor: (req, input) => record({ ...input, actor: actorOf(req.headers), door: input.door ?? doorOf(req.headers) }),
    recordRoute: (route) => void extraRoutes.push(route),
    gitEnqueue: (enqueue) => (name) => {
      void fromGit.changed(name);
      enqueue(name);
    },
    middleware: apiRecorder({ index: deps.index, actorOf, record, extraRoutes }),
    router: auditRouter({ audit: log, index: deps.index, access: deps.access }),
    health: {
      read: () => ({ ...log.state(), kept_at: archive?.where ?? null }),
      problems: () => {
        const torn = log.state().torn;
        return torn ? [`audit trail: its last line was cut short by an interrupted write and set aside in ${join(dir, torn)}; GET /audit/verify checks the rest`] : [];
      },
    },
    close: async () => {
      closed = true;
      clearTimeout(timer);
      offController();
      // Bounded: a shutdown stays within the platform's 15 s even when the target is slow (the copy goes on meanwhile).
      const lastCopy = copyCurrent().catch((error) => deps.log(`audit trail: the last copy to ${archive?.where} failed: ${(error as Error).message}`));
      await Promise.race([lastCopy, new Promise((resolve) => setTimeout(resolve, FINAL_COPY_MS).unref())]);
      log.close();
    },
  };
}
