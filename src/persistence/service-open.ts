// Opens the persistence target the settings name and builds the service on it. Loaded by the
// service only when a target is set, so without one no persistence code (and never the Databricks
// SDK) is loaded; the SDK loads only for a volume target.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { PersistSettings, PlatformSettings } from '../config/settings.ts';
import { SnapshotEngine } from './engine.ts';
import { FolderStore } from './folder-store.ts';
import { PersistenceService, type PersistenceDeps } from './service-persistence.ts';
import type { SnapshotStore } from './types.ts';

/** A target that cannot be opened: the message says what is missing. */
export class PersistTargetError extends Error {}

export interface OpenOptions extends Omit<PersistenceDeps, 'engine' | 'target' | 'retry' | 'now' | 'stagingDir'> {
  persist: PersistSettings;
  platform?: PlatformSettings;
  /** The data folder: the engine keeps its cache of what was uploaded in `<data>/persistence`. */
  dataDir: string;
}

/** The store of the target (a folder, or a volume through the Files API), then the engine and the service over it. */
export async function openPersistence(options: OpenOptions): Promise<PersistenceService> {
  const { persist, platform, dataDir, ...deps } = options;
  const store = await openStore(persist, platform, deps.log);
  // Copies of servers' files a stopped service left behind are of no use.
  const stagingDir = join(dataDir, 'persistence-staging');
  await fs.rm(stagingDir, { recursive: true, force: true });
  const now = persist.now;
  const engine = new SnapshotEngine({
    store,
    cacheDir: join(dataDir, 'persistence'),
    ...(now ? { now } : {}),
    log: deps.log,
  });
  const service = new PersistenceService({
    ...deps,
    engine,
    stagingDir,
    target: store.description,
    retry: { initialMs: persist.retryInitialMs, maxMs: persist.retryMaxMs },
    ...(now ? { now } : {}),
  });
  service.targetStore = store;
  return service;
}

async function openStore(persist: PersistSettings, platform: PlatformSettings | undefined, log: (message: string) => void): Promise<SnapshotStore> {
  const { target } = persist;
  if (target.kind === 'folder') return new FolderStore(target.dir);
  const { createVolumeStore } = await import('./volume-store.ts');
  try {
    return await createVolumeStore({ target, platform, log });
  } catch (error) {
    throw new PersistTargetError(`${persist.from}=dbfs:${target.path}: ${(error as Error).message}`);
  }
}
