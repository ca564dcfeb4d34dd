// The audit trail as a part of the service: its file in the data folder (audit/), the recorders of
// each door (the API's middleware, the controller's acts read from the index, the manifests folder
// or the cluster's objects), its routes, its section of GET /health, and its copies at a folder
// persistence target. service-parts.ts builds it with one call; everything else is here.
import { copyFileSync, mkdirSync } from 'node:fs';
import { copyFile, mkdir, rename } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { RequestHandler, Router } from 'express';
import type { ServerAccess } from '../api/access.ts';
import type { PersistTarget } from '../config/persist-target.ts';
import type { HealthSection } from '../core/health-section.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { ManifestSource } from '../manifests/source.ts';
import { apiRecorder } from './api-recorder.ts';
import { AuditLog } from './audit-log.ts';
import { recordControllerActs } from './controller-recorder.ts';
import type { AuditInput } from './entry.ts';
import { chainFiles, CURRENT_FILE } from './files.ts';
import { auditManifestWatch, ManifestRecorder } from './manifest-recorder.ts';
import { auditRouter } from './routes.ts';

export interface AuditDeps {
  dataDir: string;
  index: ServerIndex;
  access: ServerAccess;
  /** The manifests' source; `door` says which it is. */
  source: Pick<ManifestSource, 'watch'> & { textOf(name: string): Promise<string | undefined> };
  door: 'manifest' | 'cluster';
  /** The persistence target, when one is set: the trail's files are copied there. */
  persist?: PersistTarget;
  /** How often the file being written is copied to the target (the snapshot interval). */
  copyEveryMs: () => number;
  log: (message: string) => void;
}

export interface AuditPart {
  log: AuditLog;
  /** Records a change the recorders here do not see (sharing routes built elsewhere call it). */
  record(input: AuditInput): void;
  middleware: RequestHandler;
  router: Router;
  health: HealthSection;
  /** Stops following, copies the current file a last time, and closes the file. */
  close(): Promise<void>;
}

/** Builds the trail and starts recording. */
export function buildAudit(deps: AuditDeps): AuditPart {
  const dir = join(deps.dataDir, 'audit');
  const archive = deps.persist ? new AuditArchive(deps.persist, deps.log) : undefined;
  // A fresh data folder (a new container) takes the trail back from the target before it goes on.
  archive?.bringBack(dir);
  const log = AuditLog.open({ dir, log: deps.log, onRotated: (path) => void archive?.copy(path).then(() => archive.copy(join(dir, CURRENT_FILE))) });
  const record = (input: AuditInput) => {
    try {
      log.record(input);
    } catch (error) {
      // A full disk must not turn a person's action into an error: the log says the entry is missing.
      deps.log(`audit trail: an entry could not be written (${input.action} of ${input.server_name ?? 'no server'} by ${input.actor}): ${(error as Error).message}`);
    }
  };
  const offController = recordControllerActs({ index: deps.index, record });
  auditManifestWatch(deps.source, new ManifestRecorder({ index: deps.index, textOf: (name) => deps.source.textOf(name), door: deps.door, record, log: deps.log }));
  const actorOf: Parameters<typeof apiRecorder>[0]['actorOf'] = (headers) => {
    const who = deps.access.requester(headers);
    return who.local ? 'local' : (who.user ?? 'unknown');
  };
  let copied = log.state().last_seq;
  let timer: NodeJS.Timeout | undefined;
  const copyCurrent = async () => {
    const seq = log.state().last_seq;
    if (!archive || seq === copied) return;
    log.flush();
    await archive.copy(join(dir, CURRENT_FILE));
    copied = seq;
  };
  const schedule = () => {
    if (!archive) return;
    timer = setTimeout(() => void copyCurrent().finally(schedule), deps.copyEveryMs());
    timer.unref();
  };
  schedule();
  return {
    log,
    record,
    middleware: apiRecorder({ index: deps.index, actorOf, record }),
    router: auditRouter({ audit: log, index: deps.index, access: deps.access }),
    health: {
      read: () => ({ ...log.state(), kept_at: archive?.where ?? null }),
      problems: () => {
        const torn = log.state().torn;
        return torn ? [`audit trail: its last line was cut short by an interrupted write and set aside in ${join(dir, torn)}; GET /audit/verify checks the rest`] : [];
      },
    },
    close: async () => {
      clearTimeout(timer);
      offController();
      await copyCurrent().catch((error) => deps.log(`audit trail: the last copy to ${archive?.where} failed: ${(error as Error).message}`));
      log.close();
    },
  };
}

/**
 * The trail's copies at a folder persistence target (<target>/audit/): each rotated file once,
 * the file being written again at each round, and all of them brought back into a fresh data
 * folder. A file is copied beside its place, then renamed, so the target never holds half a file.
 * A volume target is not written to yet: said once.
 */
class AuditArchive {
  readonly where: string | null;
  readonly #log: (message: string) => void;

  constructor(target: PersistTarget, log: (message: string) => void) {
    this.#log = log;
    this.where = target.kind === 'folder' ? join(target.dir, 'audit') : null;
    if (target.kind !== 'folder') log(`audit trail: kept in the data folder only; copying it to the volume ${target.path} is not supported yet`);
  }

  /** Copies the target's files into `dir` when `dir` holds no trail yet (the chain then goes on from them). */
  bringBack(dir: string): void {
    if (!this.where || chainFiles(dir).length > 0) return;
    const kept = chainFiles(this.where);
    if (kept.length === 0) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const file of kept) copyFileSync(join(this.where, file), join(dir, file));
    this.#log(`audit trail: ${kept.length} file(s) brought back from ${this.where}`);
  }

  async copy(path: string): Promise<void> {
    if (!this.where) return;
    try {
      await mkdir(this.where, { recursive: true, mode: 0o700 });
      const to = join(this.where, basename(path));
      const temporary = `${to}.${process.pid}.tmp`;
      await copyFile(path, temporary);
      await rename(temporary, to);
    } catch (error) {
      this.#log(`audit trail: copying ${basename(path)} to ${this.where} failed: ${(error as Error).message}`);
    }
  }
}
