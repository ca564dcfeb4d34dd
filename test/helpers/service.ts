// Starts the real service against the stub editor in a temp folder, and cleans up after it.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePersistTarget } from '../../src/config/persist-target.ts';
import { DEFAULT_CONFIG, loadConfig, type Config, type PersistSettings, type Settings } from '../../src/config/settings.ts';
import { discoverEditors, stopAllEditors } from '../../src/runtime/processes.ts';
import { readStat } from '../../src/core/procfs.ts';
import { startService, type Service } from '../../src/service.ts';
import { DataLayout } from '../../src/workspace/layout.ts';

export { eventually } from './wait.ts';

export const STUB_EDITOR = new URL('../fixtures/stub-editor.mjs', import.meta.url).pathname;

/**
 * A block of ports for one test service, in its vitest worker's own band, so files running in
 * parallel do not compete; below Linux's ephemeral range (32768+), where outgoing connections
 * would take ports at random.
 */
export function portRange(size = 100): { min: number; max: number } {
  // Files in one worker run one after another; up to four workers get 3,000 ports each.
  const worker = (Number(process.env.VITEST_POOL_ID ?? 1) - 1) % 4;
  const blocks = Math.floor(3000 / size);
  const min = 20_000 + worker * 3000 + Math.floor(Math.random() * blocks) * size;
  return { min, max: min + size - 1 };
}

export interface TestService extends Service {
  root: string;
  settings: Settings;
  lines: string[];
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>;
  stop(): Promise<void>;
}

/** Config overrides: `editor`, `controller` and `capacity` are laid over the test defaults key by key, the rest replace them. */
export type ConfigOverrides = Omit<Partial<Config>, 'editor' | 'controller' | 'capacity'> & {
  editor?: Partial<Config['editor']>;
  controller?: Partial<Config['controller']>;
  capacity?: Partial<Config['capacity']>;
};

export interface SettingsOverrides {
  root?: string;
  config?: ConfigOverrides;
  /** A config file the service reads and watches (instead of `config`); write it before starting. */
  configFile?: string;
  editorBin?: string;
  requireIdentity?: boolean;
  allowedHosts?: string[];
  templatesDir?: string;
  gitSync?: Settings['gitSync'];
  /** Databricks settings (test/platform/platform-settings.ts makes them for the fake workspace). */
  platform?: Settings['platform'];
  /** The service runs claude-code-router (DEVBOX_ROUTER; off by default in tests). */
  runRouter?: boolean;
  /** DEVBOX_PERSIST_TO as written (a folder, or dbfs:/Volumes/…), read as the settings read it; retries are quick in tests. */
  persistTo?: string;
  /** More of the persistence settings: retry waits, the clock. */
  persist?: Partial<PersistSettings>;
  /** Where editors run (DEVBOX_RUNTIME's settings); unset: local processes. */
  runtime?: Settings['runtime'];
}

export async function makeSettings(overrides: SettingsOverrides = {}): Promise<Settings> {
  const root = overrides.root ?? await fs.mkdtemp(join(tmpdir(), 'devbox-test-'));
  const given = overrides.config ?? {};
  return {
    host: '127.0.0.1',
    port: 0,
    manifestsDir: join(root, 'manifests'),
    dataDir: join(root, 'data'),
    editorBin: overrides.editorBin ?? STUB_EDITOR,
    requireIdentity: overrides.requireIdentity ?? false,
    allowedHosts: overrides.allowedHosts,
    templatesDir: overrides.templatesDir ?? join(root, 'templates'),
    gitSync: overrides.gitSync ?? {},
    ...(overrides.platform ? { platform: overrides.platform } : {}),
    runRouter: overrides.runRouter ?? false,
    ...(overrides.runtime ? { runtime: overrides.runtime } : {}),
    ...(overrides.configFile ? { configFile: overrides.configFile } : {}),
    ...(overrides.persistTo ? { persist: { target: parsePersistTarget(overrides.persistTo), from: 'DEVBOX_PERSIST_TO' as const, retryInitialMs: 50, retryMaxMs: 1000, ...overrides.persist } } : {}),
    config: overrides.configFile ? loadConfig(overrides.configFile) : {
      ...structuredClone(DEFAULT_CONFIG),
      ports: portRange(),
      ...given,
      // One level deep, as loadConfig lays a config file over the defaults.
      editor: { ...DEFAULT_CONFIG.editor, stopGraceSeconds: 2, startTimeoutSeconds: 15, ...given.editor },
      controller: { ...DEFAULT_CONFIG.controller, statsIntervalSeconds: 0.5, ...given.controller },
      capacity: { ...structuredClone(DEFAULT_CONFIG.capacity), ...given.capacity },
    },
  };
}

export async function startTestService(overrides: SettingsOverrides = {}): Promise<TestService> {
  const settings = await makeSettings(overrides);
  const root = join(settings.manifestsDir, '..');
  const lines: string[] = [];
  const service = await startService(settings, (line) => lines.push(line));
  return Object.assign(service, {
    root,
    settings,
    lines,
    request: (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      request(service.url, method, path, body, headers),
    async stop() {
      await service.close({ stopEditors: true });
      await killEditors(settings.dataDir);
      await fs.rm(root, { recursive: true, force: true });
    },
  });
}

export async function request(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed as any, headers: res.headers };
}

/** Stops every editor started with this data folder (left behind by a killed service). */
export function killEditors(dataDir: string): Promise<void> {
  return stopAllEditors(new DataLayout(dataDir).editorsDir, 500);
}

/** Editors running with this data folder, by server name. */
export function runningEditors(dataDir: string) {
  return discoverEditors(new DataLayout(dataDir).editorsDir);
}

/** True when the pid runs and is not a zombie (an orphaned editor's zombie may linger). */
export function processExists(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

/** A server created and started, to check afterwards that hostile traffic left its editor alone. */
export async function startBystander(service: TestService): Promise<{ id: string; port: number; pid: number }> {
  const created = await service.request('POST', '/servers', { name: 'Bystander' });
  const started = await service.request('POST', `/servers/${created.body.id}/start`);
  return { id: created.body.id, port: created.body.port, pid: started.body.data.pid };
}
