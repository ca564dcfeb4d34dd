// The files the access token and the service principal are written to: the router's
// configuration and ~/.databrickscfg, each whole, mode 0600, keeping what a person added.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { databricksCfgFile, writeDatabricksCfg } from '../../src/platform/databricks-cfg.ts';
import { servingUrl, workspaceUrl } from '../../src/config/workspace-url.ts';
import { routerFiles, writeRouterConfig } from '../../src/platform/router-config.ts';
import { tempHome } from './platform-settings.ts';

const homes: string[] = [];
afterEach(async () => {
  for (const dir of homes.splice(0)) await fs.rm(dir, { recursive: true, force: true });
});
const home = async () => {
  const dir = await tempHome();
  homes.push(dir);
  return dir;
};
const mode = async (path: string) => (await fs.stat(path)).mode & 0o777;
const target = { host: 'adb-1.azuredatabricks.net', endpoint: 'databricks-claude-sonnet-4', token: 'dapi-token', port: 3456 };

describe('the workspace address', () => {
  it.each([
    ['adb-1.azuredatabricks.net', 'https://adb-1.azuredatabricks.net'],
    ['https://adb-1.azuredatabricks.net/', 'https://adb-1.azuredatabricks.net'],
    ['https://https://adb-1.azuredatabricks.net', 'https://adb-1.azuredatabricks.net'],
    ['  HTTPS://ADB-1.azuredatabricks.net/some/path/ ', 'https://adb-1.azuredatabricks.net'],
    ['http://127.0.0.1:1234', 'http://127.0.0.1:1234'],
    ['http://127.0.0.1:1234/', 'http://127.0.0.1:1234'],
  ])('%s becomes %s', (given, expected) => {
    expect(workspaceUrl(given)).toBe(expected);
    expect(servingUrl(given, 'ep')).toBe(`${expected}/serving-endpoints/ep/invocations`);
  });
});

describe('the router configuration', () => {
  it('is written whole with mode 0600 in a 0700 folder, with an empty plugin log', async () => {
    const files = routerFiles(await home());
    await writeRouterConfig(files, target);
    expect(JSON.parse(await fs.readFile(files.config, 'utf8'))).toEqual({
      LOG: false,
      HOST: '127.0.0.1',
      PORT: 3456,
      Providers: [{
        name: 'databricks',
        api_base_url: 'https://adb-1.azuredatabricks.net/serving-endpoints/databricks-claude-sonnet-4/invocations',
        api_key: 'dapi-token',
        models: ['databricks-claude-sonnet-4'],
      }],
      Router: { default: 'databricks,databricks-claude-sonnet-4' },
    });
    expect(await mode(files.config)).toBe(0o600);
    expect(await mode(files.dir)).toBe(0o700);
    expect(await mode(files.pluginLog)).toBe(0o600);
    expect(await fs.readFile(files.pluginLog, 'utf8')).toBe('');
    // No temporary file left beside it.
    expect((await fs.readdir(files.dir)).sort()).toEqual(['config.json', 'plugin.log']);
  });

  it('keeps what an operator added: other providers, routes, options, and fields of its own provider entry', async () => {
    const files = routerFiles(await home());
    await fs.mkdir(files.dir, { recursive: true });
    await fs.writeFile(files.config, JSON.stringify({
      LOG: true, API_TIMEOUT_MS: 600000, HOST: '0.0.0.0', PORT: 1,
      Providers: [{ name: 'databricks', api_key: 'old', transformer: { use: ['openai'] } }, { name: 'other', api_key: 'theirs' }],
      Router: { default: 'other,m', background: 'other,small' },
    }), { mode: 0o644 });
    await writeRouterConfig(files, { ...target, token: 'new' });
    const written = JSON.parse(await fs.readFile(files.config, 'utf8'));
    expect(written).toMatchObject({ LOG: true, API_TIMEOUT_MS: 600000, HOST: '127.0.0.1', PORT: 3456 });
    expect(written.Providers).toEqual([
      { name: 'databricks', api_key: 'new', transformer: { use: ['openai'] }, api_base_url: expect.any(String), models: ['databricks-claude-sonnet-4'] },
      { name: 'other', api_key: 'theirs' },
    ]);
    expect(written.Router).toEqual({ default: 'databricks,databricks-claude-sonnet-4', background: 'other,small' });
    expect(await mode(files.config)).toBe(0o600);
  });

  it('moves a file it cannot read as a JSON object aside (mode 0600) instead of losing it', async () => {
    const files = routerFiles(await home());
    await fs.mkdir(files.dir, { recursive: true });
    await fs.writeFile(files.config, '{ "Providers": [ oops');
    const { movedAside } = await writeRouterConfig(files, target);
    expect(movedAside).toMatch(/config\.json\.unreadable-/);
    expect(await fs.readFile(movedAside!, 'utf8')).toBe('{ "Providers": [ oops');
    expect(await mode(movedAside!)).toBe(0o600);
    expect(JSON.parse(await fs.readFile(files.config, 'utf8')).Providers[0].api_key).toBe('dapi-token');
  });

  it('keeps the plugin log a person or the router already wrote', async () => {
    const files = routerFiles(await home());
    await fs.mkdir(files.dir, { recursive: true });
    await fs.writeFile(files.pluginLog, 'earlier lines\n', { mode: 0o644 });
    await writeRouterConfig(files, target);
    expect(await fs.readFile(files.pluginLog, 'utf8')).toBe('earlier lines\n');
    expect(await mode(files.pluginLog)).toBe(0o600);
  });
});

describe('~/.databrickscfg', () => {
  const principal = { host: 'https://adb-1.azuredatabricks.net/', clientId: 'client-id', clientSecret: 'client-secret' };

  it('gets a [DEFAULT] profile with the service principal, mode 0600', async () => {
    const file = databricksCfgFile(await home());
    await writeDatabricksCfg(file, principal);
    expect(await fs.readFile(file, 'utf8')).toBe('[DEFAULT]\nhost          = https://adb-1.azuredatabricks.net\nclient_id     = client-id\nclient_secret = client-secret\n');
    expect(await mode(file)).toBe(0o600);
  });

  it("rewrites only [DEFAULT]: a person's other profiles and comments stay", async () => {
    const file = databricksCfgFile(await home());
    await fs.writeFile(file, [
      '; my profiles',
      '[DEFAULT]',
      'host = https://old.cloud.databricks.com',
      'token = dapi-old',
      '',
      '[staging]',
      'host = https://staging.cloud.databricks.com',
      'token = dapi-staging',
      '',
      '[DEFAULT-ish]',
      'host = https://x',
    ].join('\n'), { mode: 0o644 });
    await writeDatabricksCfg(file, principal);
    const text = await fs.readFile(file, 'utf8');
    expect(text.startsWith('[DEFAULT]\nhost          = https://adb-1.azuredatabricks.net\nclient_id     = client-id\nclient_secret = client-secret\n')).toBe(true);
    expect(text).not.toContain('dapi-old');
    expect(text).not.toContain('old.cloud');
    expect(text).toContain('; my profiles');
    expect(text).toContain('[staging]\nhost = https://staging.cloud.databricks.com\ntoken = dapi-staging');
    expect(text).toContain('[DEFAULT-ish]\nhost = https://x');
    expect(text.match(/^\[DEFAULT\]$/gm)).toHaveLength(1);
    expect(await mode(file)).toBe(0o600);
  });
});
