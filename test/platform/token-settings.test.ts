// The platform block of the settings: when it applies, the token's lifetime and rotation from
// the environment, and a client secret that never shows when the settings are printed.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../src/config/settings.ts';

const credentials = { DATABRICKS_HOST: 'adb-1.azuredatabricks.net', DATABRICKS_CLIENT_ID: 'client-id', DATABRICKS_CLIENT_SECRET: 'the-client-secret' };
const platformOf = (env: NodeJS.ProcessEnv) => loadSettings(env, { readConfig: false }).platform;

describe('the platform settings', () => {
  it('apply only when deployed or given all three credentials', () => {
    expect(platformOf({})).toBeUndefined();
    expect(platformOf({ DATABRICKS_HOST: credentials.DATABRICKS_HOST })).toBeUndefined();
    expect(platformOf(credentials)).toMatchObject({ host: 'adb-1.azuredatabricks.net', clientId: 'client-id', tokenLifetimeSeconds: 3600 });
    // Deployed without credentials: the block is there, and GET /health says what is missing.
    expect(platformOf({ DATABRICKS_APP_NAME: 'devbox' })).toMatchObject({ host: undefined, clientSecret: undefined });
  });

  it('take the token lifetime from CLAUDE_CODE_TOKEN_EXPIRY_SECONDS, 3600 when unset', () => {
    expect(platformOf(credentials)?.tokenLifetimeSeconds).toBe(3600);
    expect(platformOf({ ...credentials, CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: '7200' })?.tokenLifetimeSeconds).toBe(7200);
  });

  it.each(['0', '-5', '1.5', 'abc', '1e3', '99999999999999999999'])('refuse CLAUDE_CODE_TOKEN_EXPIRY_SECONDS=%s in one line that says what to set', (value) => {
    const load = () => platformOf({ ...credentials, CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: value });
    expect(load).toThrow(SettingsError);
    expect(load).toThrow(`CLAUDE_CODE_TOKEN_EXPIRY_SECONDS="${value}" must be a whole number of seconds, at least 1: set it to`);
    try {
      load();
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });

  it('rotate at 80% of the lifetime by default; a fraction or "off" changes it', () => {
    expect(platformOf(credentials)?.rotation).toBe(0.8);
    expect(platformOf({ ...credentials, DEVBOX_TOKEN_ROTATION: '0.5' })?.rotation).toBe(0.5);
    expect(platformOf({ ...credentials, DEVBOX_TOKEN_ROTATION: 'off' })?.rotation).toBe('off');
    for (const value of ['0', '1', '80%', 'yes']) {
      expect(() => platformOf({ ...credentials, DEVBOX_TOKEN_ROTATION: value })).toThrow('DEVBOX_TOKEN_ROTATION');
    }
  });

  it('read the serving endpoint, the revoke grace period and the router port, with defaults', () => {
    expect(platformOf(credentials)).toMatchObject({ servingEndpoint: 'databricks-claude-sonnet-4', revokeGraceSeconds: 60, routerPort: 3456 });
    expect(platformOf({ ...credentials, DEVBOX_SERVING_ENDPOINT: 'my-endpoint', DEVBOX_TOKEN_REVOKE_GRACE_SECONDS: '5', DEVBOX_ROUTER_PORT: '4000' }))
      .toMatchObject({ servingEndpoint: 'my-endpoint', revokeGraceSeconds: 5, routerPort: 4000 });
    expect(() => platformOf({ ...credentials, DEVBOX_TOKEN_REVOKE_GRACE_SECONDS: '-1' })).toThrow('DEVBOX_TOKEN_REVOKE_GRACE_SECONDS');
    expect(() => platformOf({ ...credentials, DEVBOX_ROUTER_PORT: '0' })).toThrow('DEVBOX_ROUTER_PORT');
  });

  it('refuse a DATABRICKS_HOST that is not a workspace address', () => {
    expect(() => platformOf({ ...credentials, DATABRICKS_HOST: 'ftp://adb-1.azuredatabricks.net' })).toThrow('DATABRICKS_HOST');
  });

  it('never print the client secret', () => {
    const settings = loadSettings(credentials, { readConfig: false });
    expect(settings.platform?.clientSecret).toBe('the-client-secret');
    expect(JSON.stringify(settings)).not.toContain('the-client-secret');
    expect(inspect(settings, { depth: 5 })).not.toContain('the-client-secret');
    expect(`${JSON.stringify(settings.platform)}`).toContain('"clientSecret":"***"');
  });
});
