// A redeploy as a platform does it, for the tests of what comes back: a target (a folder, or a
// Unity Catalog volume through the loopback fake of the Files API), the service's SIGTERM path
// (its final snapshots and declared state, then close), a machine wiped of manifests, data and
// editors, and the fleet as a person sees it (records, manifest files, every workspace byte).
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { PlatformSettings } from '../../src/config/settings.ts';
import { killEditors, startTestService, type SettingsOverrides, type TestService } from '../helpers/service.ts';
import { startFakeWorkspace, type FakeWorkspace } from '../platform/fake-workspace.ts';
import { fakeWorkspaceSettings, tempHome } from '../platform/platform-settings.ts';
import { hashTree, sorted } from './service-fixtures.ts';

export type TargetKind = 'folder' | 'volume';

export interface Target {
  kind: TargetKind;
  persistTo: string;
  platform?: PlatformSettings;
  /** The fake workspace behind a volume target (its faults can be set). */
  workspace?: FakeWorkspace;
  close(): Promise<void>;
}

const VOLUME = '/Volumes/main/team/devbox';

/** A folder of its own, or a volume of a fake workspace started for it. */
export async function makeTarget(kind: TargetKind, base: string): Promise<Target> {
  if (kind === 'folder') {
    const keep = join(base, 'keep');
    await fs.mkdir(keep, { recursive: true });
    return { kind, persistTo: keep, close: async () => undefined };
  }
  const workspace = await startFakeWorkspace();
  workspace.addVolume(VOLUME);
  const home = await tempHome();
  return {
    kind, workspace, persistTo: `dbfs:${VOLUME}/prod`, platform: fakeWorkspaceSettings(workspace, home),
    async close() {
      await workspace.close();
      await fs.rm(home, { recursive: true, force: true });
    },
  };
}

export function scratch(prefix: string): Promise<string> {
  return fs.mkdtemp(join(tmpdir(), prefix));
}

/**
 * The service on `root` keeping its work at `target`; `cleanups` gets what stops it and wipes the
 * machine (the target stays, for the next start on the same root).
 */
export async function startOn(target: Target, root: string, cleanups: Array<() => Promise<unknown>>, overrides: SettingsOverrides = {}): Promise<TestService> {
  const service = await startTestService({ ...overrides, root, persistTo: target.persistTo, platform: target.platform });
  cleanups.push(async () => {
    await service.close({ stopEditors: true }).catch(() => undefined);
    await wipe(service);
  });
  return service;
}

/** What `npm start` does on SIGTERM (src/main.ts): the final snapshots within 12 s, then close, leaving editors running. */
export async function sigterm(service: TestService): Promise<void> {
  const summary = await service.persistence!.snapshotAll('shutdown', 12_000);
  expect(summary.failed, JSON.stringify(summary)).toEqual([]);
  await service.close({ stopEditors: false });
}

/** A fresh container: no editors, no manifests, no data folder (the target stays). */
export async function wipe(service: TestService): Promise<void> {
  await killEditors(service.settings.dataDir);
  await fs.rm(service.settings.manifestsDir, { recursive: true, force: true });
  await fs.rm(service.settings.dataDir, { recursive: true, force: true });
}

/** One server as a person sees it. */
export interface SeenServer {
  id: string;
  name: string;
  port: number;
  status: string;
  manifest: string;
  workspace: Array<[string, string]>;
}

/** The fleet by manifest name: each record's id, display name, port and status, its manifest file's text and its workspace's bytes. */
export async function fleetOf(service: TestService): Promise<Record<string, SeenServer>> {
  const { body } = await service.request('GET', '/servers');
  const fleet: Record<string, SeenServer> = {};
  for (const record of body) {
    expect(record.workspace_path, `${record.manifest} has no workspace path yet`).toEqual(expect.any(String));
    fleet[record.manifest] = {
      id: record.id,
      name: record.name,
      port: record.port,
      status: record.status,
      manifest: await fs.readFile(join(service.settings.manifestsDir, `${record.manifest}.yaml`), 'utf8'),
      workspace: sorted(await hashTree(record.workspace_path)),
    };
  }
  return fleet;
}
