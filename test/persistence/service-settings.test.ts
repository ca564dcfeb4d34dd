// Where work is kept is a setting: DEVBOX_PERSIST_TO, else persistence.target in the config file.
// A target that cannot be one refuses the start with the forms that are accepted; none keeps
// nothing. The service loads no persistence code without a target.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadSettings, SettingsError } from '../../src/config/settings.ts';
import { startService, StartupError } from '../../src/service.ts';
import { makeSettings } from '../helpers/service.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function configFile(text: string): Promise<string> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-persist-config-'));
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'devbox.config.yaml');
  await fs.writeFile(file, text);
  return file;
}

describe('the persistence target', () => {
  it('comes from DEVBOX_PERSIST_TO, else the config file, and the config keys have their defaults', async () => {
    const file = await configFile('persistence:\n  target: /mnt/from-config\n  intervalSeconds: 60\n');
    expect(loadSettings({ DEVBOX_CONFIG: file }).persist).toMatchObject({ target: { kind: 'folder', dir: '/mnt/from-config' }, from: 'persistence.target' });
    expect(loadSettings({ DEVBOX_CONFIG: file, DEVBOX_PERSIST_TO: 'dbfs:/Volumes/main/team/devbox/prod' }).persist)
      .toMatchObject({ target: { kind: 'volume', path: '/Volumes/main/team/devbox/prod' }, from: 'DEVBOX_PERSIST_TO' });
    expect(loadSettings({ DEVBOX_CONFIG: file }).config.persistence).toEqual({ ...DEFAULT_CONFIG.persistence, target: '/mnt/from-config', intervalSeconds: 60 });
    expect(loadSettings({ DEVBOX_CONFIG: await configFile('ports: { min: 9000, max: 9010 }\n') }).persist).toBeUndefined();
    expect(DEFAULT_CONFIG.persistence).toEqual({ intervalSeconds: 300, exclude: [], retainDeletedDays: 7, maxWorkspaceMb: 2048 });
  });

  it('refuses a target that cannot be one, saying which forms are accepted', async () => {
    for (const target of ['relative/folder', 'dbfs:/Volumes/main', 's3://bucket/devbox', 'dbfs:/mnt/old']) {
      expect(() => loadSettings({ DEVBOX_CONFIG: '', DEVBOX_PERSIST_TO: target }), target).toThrow(SettingsError);
      expect(() => loadSettings({ DEVBOX_PERSIST_TO: target }), target).toThrow(/DEVBOX_PERSIST_TO=.*dbfs:\/Volumes\/<catalog>\/<schema>\/<volume>\/<prefix>.*absolute folder path/);
    }
    const file = await configFile('persistence:\n  target: keep-here\n');
    expect(() => loadSettings({ DEVBOX_CONFIG: file })).toThrow(/persistence\.target="keep-here"/);
    const tooOften = await configFile('persistence:\n  intervalSeconds: 1\n');
    expect(() => loadSettings({ DEVBOX_CONFIG: tooOften })).toThrow(/persistence\.intervalSeconds/);
  });

  it('refuses to start with a volume and no service principal to reach it, writing nothing', async () => {
    const settings = await makeSettings();
    cleanups.push(() => fs.rm(join(settings.manifestsDir, '..'), { recursive: true, force: true }));
    const refused = startService({ ...settings, persist: { target: { kind: 'volume', path: '/Volumes/main/team/devbox/prod' }, from: 'DEVBOX_PERSIST_TO', retryInitialMs: 50, retryMaxMs: 500 } }, () => undefined);
    await expect(refused).rejects.toThrow(StartupError);
    await expect(refused).rejects.toThrow(/^DEVBOX_PERSIST_TO=dbfs:\/Volumes\/main\/team\/devbox\/prod: .*DATABRICKS_HOST/);
    expect(await fs.readdir(settings.manifestsDir).catch(() => [])).toEqual([]);
  });

  it('loads no persistence code, and not the Databricks SDK, when no target is set', () => {
    // Every module the import resolves, ESM and CommonJS alike, seen through a resolve hook.
    const probe = `import { registerHooks } from 'node:module';
const seen = [];
registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });
await import(${JSON.stringify(new URL('../../src/service.ts', import.meta.url).href)});
console.log(JSON.stringify(seen.filter((url) => url.includes('/src/persistence/') || url.includes('@databricks'))));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
    // The contracts alone (the error classes the API's routes answer with), a few lines and no package.
    const loaded = (JSON.parse(out.trim().split('\n').at(-1)!) as string[]).filter((url) => !url.endsWith('/src/persistence/types.ts'));
    expect(loaded).toEqual([]);
  });
});
