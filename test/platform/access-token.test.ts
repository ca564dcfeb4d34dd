// The access token of a running service against the fake workspace, through the real SDK: created
// at start-up and written to the router's configuration, failures reported and retried without
// stopping the service, rotated before it expires, and revoked once replaced and at shutdown.
import { promises as fs } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { TokenWritten } from '../../src/platform/token-keeper.ts';
import { eventually, startBystander, startTestService, type TestService } from '../helpers/service.ts';
import { startFakeWorkspace, type FakeWorkspace } from './fake-workspace.ts';
import { fakeWorkspaceSettings, tempHome } from './platform-settings.ts';
import { loadSettings, platformSettings } from '../../src/config/settings.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(env: NodeJS.ProcessEnv = {}, tuning = {}): Promise<{ workspace: FakeWorkspace; home: string; service: TestService; before: bigint }> {
  const workspace = await startFakeWorkspace();
  cleanups.push(() => workspace.close());
  const home = await tempHome();
  cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
  const before = BigInt(Date.now()) * 1_000_000n;
  const service = await startTestService({ platform: fakeWorkspaceSettings(workspace, home, env, tuning) });
  cleanups.push(() => service.stop());
  return { workspace, home, service, before };
}

const readJson = async (file: string) => JSON.parse(await fs.readFile(file, 'utf8'));
const mode = async (path: string) => (await fs.stat(path)).mode & 0o777;
const routerConfigOf = (home: string) => `${home}/.claude-code-router/config.json`;
const exists = (path: string) => fs.access(path).then(() => true, () => false);

describe('the access token at start-up', () => {
  it('is created with the comment sdk-<Unix time in ns> and a lifetime of 3600 s, and written to the router configuration', async () => {
    const { workspace, home, service, before } = await setUp();
    const token = await eventually(() => workspace.tokens[0]);
    const after = BigInt(Date.now()) * 1_000_000n;
    expect(token.comment).toMatch(/^sdk-\d{19}$/);
    const ns = BigInt(token.comment!.slice(4));
    expect(ns >= before && ns <= after).toBe(true);
    expect(token.lifetimeSeconds).toBe(3600);

    const config = await eventually(() => readJson(routerConfigOf(home)));
    expect(config).toEqual({
      LOG: false,
      HOST: '127.0.0.1',
      PORT: 3456,
      Providers: [{
        name: 'databricks',
        api_base_url: `${workspace.url}/serving-endpoints/databricks-claude-sonnet-4/invocations`,
        api_key: token.value,
        models: ['databricks-claude-sonnet-4'],
      }],
      Router: { default: 'databricks,databricks-claude-sonnet-4' },
    });
    expect(await mode(routerConfigOf(home))).toBe(0o600);
    expect(await mode(`${home}/.claude-code-router`)).toBe(0o700);
    expect(await mode(`${home}/.claude-code-router/plugin.log`)).toBe(0o600);
    expect(await fs.readFile(`${home}/.databrickscfg`, 'utf8'))
      .toBe(`[DEFAULT]\nhost          = ${workspace.url}\nclient_id     = ${workspace.clientId}\nclient_secret = ${workspace.clientSecret}\n`);
    expect(await mode(`${home}/.databrickscfg`)).toBe(0o600);

    // The token written is one the serving endpoint accepts.
    const answer = await fetch(config.Providers[0].api_base_url, { method: 'POST', headers: { authorization: `Bearer ${config.Providers[0].api_key}` }, body: '{}' });
    expect(answer.status).toBe(200);

    const health = await service.request('GET', '/health');
    expect(health.body.status).toBe('healthy');
    expect(health.body.assistant).toEqual({
      configured: true,
      endpoint: 'databricks-claude-sonnet-4',
      config_file: routerConfigOf(home),
      cli_config_file: `${home}/.databrickscfg`,
      token: { comment: token.comment, created_at: expect.any(String), expires_at: new Date(token.expiresAt!).toISOString(), rotates_at: expect.any(String) },
      last_error: null,
      last_attempt_at: expect.any(String),
      next_attempt_at: expect.any(String),
    });
    expect(JSON.stringify(health.body)).not.toContain(token.value);
  });

  it('takes its lifetime and endpoint from CLAUDE_CODE_TOKEN_EXPIRY_SECONDS and DEVBOX_SERVING_ENDPOINT', async () => {
    const { workspace, home } = await setUp({ CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: '900', DEVBOX_SERVING_ENDPOINT: 'my-claude', DEVBOX_ROUTER_PORT: '4567' });
    const token = await eventually(() => workspace.tokens[0]);
    expect(token.lifetimeSeconds).toBe(900);
    const config = await eventually(() => readJson(routerConfigOf(home)));
    expect(config.PORT).toBe(4567);
    expect(config.Providers[0]).toMatchObject({ api_base_url: `${workspace.url}/serving-endpoints/my-claude/invocations`, models: ['my-claude'] });
    expect(config.Router.default).toBe('databricks,my-claude');
  });
});

describe('a token that cannot be created', () => {
  it('leaves the service serving editors, reports the permission problem, and recovers once allowed', async () => {
    const workspace = await startFakeWorkspace();
    cleanups.push(() => workspace.close());
    workspace.denyTokenCreate(true);
    const home = await tempHome();
    cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
    const service = await startTestService({ platform: fakeWorkspaceSettings(workspace, home) });
    cleanups.push(() => service.stop());

    const health = await eventually(async () => {
      const answer = await service.request('GET', '/health');
      return answer.body.assistant?.last_error ? answer : undefined;
    });
    expect(health.body.status).toBe('degraded');
    expect(health.body.assistant).toMatchObject({ configured: false, token: null });
    expect(health.body.assistant.last_error).toContain('permission denied');
    expect(health.body.assistant.last_error).toContain('"Can Use" permission on tokens');
    expect(health.body.problems).toContainEqual(expect.stringContaining('assistant: the workspace refused to create an access token'));

    // Editors start all the same; no router configuration, not even a partial one.
    const editor = await startBystander(service);
    expect(editor.pid).toBeGreaterThan(0);
    expect(await exists(routerConfigOf(home))).toBe(false);
    expect((await fs.readdir(`${home}/.claude-code-router`)).filter((name) => name !== 'plugin.log')).toEqual([]);

    // Retried with backoff, and logged once.
    await eventually(() => workspace.createAttempts >= 3);
    expect(workspace.tokens).toHaveLength(0);
    expect(service.lines.filter((line) => line.includes('permission denied'))).toHaveLength(1);
    workspace.denyTokenCreate(false);
    const token = await eventually(() => workspace.tokens[0]);
    const config = await eventually(() => readJson(routerConfigOf(home)));
    expect(config.Providers[0].api_key).toBe(token.value);
    const recovered = await eventually(async () => {
      const answer = await service.request('GET', '/health');
      return answer.body.assistant.configured ? answer : undefined;
    });
    expect(recovered.body.status).toBe('healthy');
    expect(recovered.body.assistant.last_error).toBeNull();
    expect(service.lines.filter((line) => line.includes('permission denied'))).toHaveLength(1);
    expect(service.lines.find((line) => line.includes('permission denied'))).toContain('grant the service principal');
  });

  it('is retried while the workspace cannot be reached, and the service starts meanwhile', async () => {
    const workspace = await startFakeWorkspace();
    cleanups.push(() => workspace.close());
    workspace.setReachable(false);
    const home = await tempHome();
    cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
    const service = await startTestService({ platform: fakeWorkspaceSettings(workspace, home) });
    cleanups.push(() => service.stop());
    const health = await eventually(async () => {
      const answer = await service.request('GET', '/health');
      return answer.body.assistant?.last_error ? answer : undefined;
    });
    expect(health.body.assistant.last_error).toContain(`the workspace at ${workspace.url} cannot be reached`);
    expect(await exists(routerConfigOf(home))).toBe(false);
    workspace.setReachable(true);
    const token = await eventually(() => workspace.tokens[0]);
    expect((await eventually(() => readJson(routerConfigOf(home)))).Providers[0].api_key).toBe(token.value);
  });
});

describe('a workspace that does not answer', () => {
  it('is given up on after the call bound, reported, and tried again', async () => {
    // Accepts connections and never answers, as a black-holed workspace would.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => { silent.closeAllConnections(); silent.close(resolve); }));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const home = await tempHome();
    cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
    const started = performance.now();
    const service = await startTestService({
      platform: fakeWorkspaceSettings({ url, clientId: 'id', clientSecret: 'secret' } as FakeWorkspace, home, {}, { callTimeoutMs: 500 }),
    });
    cleanups.push(() => service.stop());
    // The service serves at once.
    expect((await service.request('GET', '/servers')).status).toBe(200);
    const health = await eventually(async () => {
      const answer = await service.request('GET', '/health');
      return answer.body.assistant?.last_error ? answer : undefined;
    });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(health.body.assistant.last_error).toContain(`the workspace at ${url} cannot be reached`);
    expect(health.body.assistant.next_attempt_at).not.toBeNull();
  });
});

describe('a deployed app without credentials', () => {
  it('serves, and says in GET /health which variables to set', async () => {
    const home = await tempHome();
    cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
    const platform = loadSettings({ DATABRICKS_APP_NAME: 'devbox', DATABRICKS_HOST: 'adb-1.azuredatabricks.net' }, { readConfig: false }).platform!;
    const service = await startTestService({ platform: platformSettings({ ...platform, homeDir: home }) });
    cleanups.push(() => service.stop());
    const health = await service.request('GET', '/health');
    expect(health.body.status).toBe('degraded');
    expect(health.body.assistant).toMatchObject({ configured: false, token: null });
    expect(health.body.assistant.last_error).toContain('DATABRICKS_CLIENT_ID, DATABRICKS_CLIENT_SECRET are not set');
    expect(await fs.readdir(home)).toEqual([]);
  });
});

describe('rotation and revocation', () => {
  it('replaces the token before it expires, tells the listeners, and revokes the old one after the grace period', async () => {
    const { workspace, home, service } = await setUp(
      { CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: '4', DEVBOX_TOKEN_ROTATION: '0.5', DEVBOX_TOKEN_REVOKE_GRACE_SECONDS: '0.5' },
    );
    const written: TokenWritten[] = [];
    service.assistant!.onTokenWritten((token) => {
      written.push(token);
    });
    const first = await eventually(() => workspace.tokens[0]);
    const second = await eventually(() => workspace.tokens[1], 10_000);
    expect(second.createdAt - first.createdAt).toBeGreaterThanOrEqual(1500);
    expect(second.createdAt - first.createdAt).toBeLessThan(4000);
    expect(second.lifetimeSeconds).toBe(4);
    await eventually(async () => (await readJson(routerConfigOf(home))).Providers[0].api_key === second.value);
    await eventually(() => written.some((token) => token.comment === second.comment));
    expect(written.find((token) => token.comment === second.comment)).toMatchObject({ configFile: routerConfigOf(home) });
    expect(JSON.stringify(written)).not.toContain(second.value);

    // The old token stays valid during the grace period, then is revoked, well before it expires.
    await eventually(() => first.deleted);
    const keptFor = first.deletedAt! - second.createdAt;
    expect(keptFor).toBeGreaterThanOrEqual(450);
    expect(keptFor).toBeLessThan(2000);
    expect(first.deletedAt!).toBeLessThan(first.expiresAt!);
    expect(second.deleted).toBe(false);
    expect(await mode(routerConfigOf(home))).toBe(0o600);
  });

  it('revokes the current token at a clean shutdown', async () => {
    const { workspace, service } = await setUp();
    const token = await eventually(() => workspace.tokens[0]);
    await eventually(async () => (await service.request('GET', '/health')).body.assistant.configured);
    await service.close();
    expect(token.deleted).toBe(true);
    expect(service.lines).toContainEqual(expect.stringContaining('revoked 1 access token(s) at shutdown'));
  });

  it('keeps the token with rotation off', async () => {
    const { workspace, service } = await setUp({ CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: '2', DEVBOX_TOKEN_ROTATION: 'off' });
    await eventually(() => workspace.tokens[0]);
    const health = await eventually(async () => {
      const answer = await service.request('GET', '/health');
      return answer.body.assistant.configured ? answer : undefined;
    });
    expect(health.body.assistant.token.rotates_at).toBeNull();
    expect(health.body.assistant.next_attempt_at).toBeNull();
  });
});
