// Platform settings for a test service: read from the same variables a deployed app has, pointed
// at the fake workspace, with a temp folder as home and short waits.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, platformSettings, type PlatformSettings } from '../../src/config/settings.ts';
import type { FakeWorkspace } from './fake-workspace.ts';

/** A home folder for one test; removed by the caller. */
export function tempHome(): Promise<string> {
  return fs.mkdtemp(join(tmpdir(), 'devbox-home-'));
}

export function fakeWorkspaceSettings(workspace: FakeWorkspace, homeDir: string, env: NodeJS.ProcessEnv = {}, tuning: Partial<PlatformSettings> = {}): PlatformSettings {
  const platform = loadSettings({
    DATABRICKS_HOST: workspace.url,
    DATABRICKS_CLIENT_ID: workspace.clientId,
    DATABRICKS_CLIENT_SECRET: workspace.clientSecret,
    ...env,
  }, { readConfig: false }).platform!;
  return platformSettings({ ...platform, homeDir, retryInitialMs: 100, retryMaxMs: 400, callTimeoutMs: 5000, ...tuning });
}
