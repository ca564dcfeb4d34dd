// The service's settings: environment variables for where things live, and the config file for
// policy (src/config/config-file.ts, re-exported here for the modules that read settings).
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { inspect } from 'node:util';
import { configFileFrom, DEFAULT_CONFIG, loadConfig, SettingsError, type Config } from './config-file.ts';
import { parsePersistTarget, type PersistTarget } from './persist-target.ts';
import { runtimeFrom, type RuntimeSettings } from './runtime-config.ts';
import { workspaceUrl } from './workspace-url.ts';

export {
  configFileFrom, DEFAULT_CONFIG, loadConfig, parseConfig, SettingsError, unknownExtensionGroups, USER_SHAPE,
  type Config, type ExtensionGroup, type PersistenceConfig,
} from './config-file.ts';
export type { KubernetesConfig, RuntimeConfig, RuntimeSettings } from './runtime-config.ts';

export interface Settings {
  host: string;
  port: number;
  /** The variable the port came from (DEVBOX_PORT, else DATABRICKS_APP_PORT); unset for the default. */
  portVariable?: 'DEVBOX_PORT' | 'DATABRICKS_APP_PORT';
  manifestsDir: string;
  dataDir: string;
  configFile?: string;
  /** DEVBOX_EDITOR_BIN as given; the runtime resolves the editor when unset. */
  editorBin?: string;
  /** Refuse requests without the identity headers of the Databricks Apps front proxy. */
  requireIdentity: boolean;
  /** DEVBOX_ALLOWED_HOSTS: host names besides loopback's and the bound address that requests may carry (local mode). */
  allowedHosts?: string[];
  /** DEVBOX_TEMPLATES_DIR: one YAML file per EditorServerTemplate (default ./templates). */
  templatesDir: string;
  /** Folders kept in sync with a git repository by the service itself (GitOps); unset: none. */
  gitSync: { templates?: GitSyncSettings; manifests?: GitSyncSettings };
  /** Databricks (the model-serving access token, the router's files); unset when not deployed and not given credentials. */
  platform?: PlatformSettings;
  /** DEVBOX_ROUTER: the service runs claude-code-router for the editors (default: when deployed as an app). */
  runRouter: boolean;
  /** DEVBOX_METRICS: GET /metrics and the counting behind it (default on). */
  metrics?: boolean;
  /** DEVBOX_ACTIVITY_TRACKING: proxy traffic marks servers as used (default on; off only to measure what it costs). */
  activityTracking?: boolean;
  /** Where work is kept across restarts (DEVBOX_PERSIST_TO, else the config's persistence.target); unset: nothing is kept. */
  persist?: PersistSettings;
  /** Where editors run (DEVBOX_RUNTIME, else the config's runtime.kind) and, for a cluster, its namespace; read at start-up only. Unset: local processes. */
  runtime?: RuntimeSettings;
  config: Config;
}

/** The persistence target and how failures are retried. */
export interface PersistSettings {
  /** A folder or a volume, read from the text given (its form checked here; the place itself is opened at start). */
  target: PersistTarget;
  /** Where it was given, for messages. */
  from: 'DEVBOX_PERSIST_TO' | 'persistence.target';
  /** First and longest wait between retries while the target fails (tests shorten them). */
  retryInitialMs: number;
  retryMaxMs: number;
  /** The clock snapshots and the retention of deleted servers go by (tests move it); unset: Date.now. */
  now?: () => number;
}

/**
 * The service principal and what the service does with it: a model-serving access token written to
 * the router's configuration, rotated and revoked. JSON.stringify and util.inspect show the client
 * secret as "***" (see platformSettings).
 */
export interface PlatformSettings {
  /** DATABRICKS_HOST, DATABRICKS_CLIENT_ID, DATABRICKS_CLIENT_SECRET; a missing one is reported in GET /health. */
  host?: string;
  clientId?: string;
  clientSecret?: string;
  /** CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: the token's lifetime_seconds (default 3600). */
  tokenLifetimeSeconds: number;
  /** DEVBOX_SERVING_ENDPOINT: the model serving endpoint the router sends to (default databricks-claude-sonnet-4). */
  servingEndpoint: string;
  /** DEVBOX_TOKEN_ROTATION: a new token at this fraction of the lifetime (default 0.8), or 'off'. */
  rotation: number | 'off';
  /** DEVBOX_TOKEN_REVOKE_GRACE_SECONDS: how long a replaced token stays valid (default 60). */
  revokeGraceSeconds: number;
  /** DEVBOX_ROUTER_PORT: where claude-code-router listens on 127.0.0.1 (default 3456). */
  routerPort: number;
  /** Where ~/.claude-code-router and ~/.databrickscfg go (default: the user's home folder). */
  homeDir: string;
  /** First and longest wait between failed platform calls, and the bound on each call (tests shorten them). */
  retryInitialMs: number;
  retryMaxMs: number;
  callTimeoutMs: number;
}

/** A repository the service pulls from: DEVBOX_<KIND>_GIT_URL, _GIT_REF and _GIT_INTERVAL_SECONDS. */
export interface GitSyncSettings {
  url: string;
  /** Branch, tag or commit; unset: the repository's default branch. */
  ref?: string;
  intervalSeconds: number;
  /** DEVBOX_<KIND>_GIT_PATH: the folder inside the repository to use; unset: its top level. */
  path?: string;
}

function portFrom(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SettingsError(`${name}="${value}" must be a port number between 0 and 65535`);
  }
  return port;
}

/** DEVBOX_ALLOWED_HOSTS: comma-separated host names, IP addresses, or `.example.com` for a domain and all below it. */
function allowedHostsFrom(value: string | undefined): string[] {
  const entries = (value ?? '').split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '');
  for (const entry of entries) {
    if (!/^\.?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/.test(entry) && isIP(entry.replace(/^\[|\]$/g, '')) === 0) {
      throw new SettingsError(`DEVBOX_ALLOWED_HOSTS: "${entry}" is not a host name: give names such as devbox.example or .example.com (a domain and all below it), without scheme or port, separated by commas`);
    }
  }
  return entries.map((entry) => entry.replace(/^\[|\]$/g, '').replace(/\.$/, ''));
}

export const DEFAULT_SERVING_ENDPOINT = 'databricks-claude-sonnet-4';

/** Platform settings whose client secret shows as "***" when logged or serialised. */
export function platformSettings(fields: PlatformSettings): PlatformSettings {
  const masked = () => ({ ...fields, clientSecret: fields.clientSecret === undefined ? undefined : '***' });
  return Object.defineProperties({ ...fields }, {
    toJSON: { value: masked, enumerable: false },
    [inspect.custom]: { value: (_depth: number, options: object) => inspect(masked(), options), enumerable: false },
  });
}

/**
 * The platform block: when deployed as an app (DATABRICKS_APP_PORT or DATABRICKS_APP_NAME), or
 * when DATABRICKS_HOST, DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET are all set.
 */
function platformFrom(env: NodeJS.ProcessEnv): PlatformSettings | undefined {
  const given = (name: string) => env[name]?.trim() || undefined;
  const host = given('DATABRICKS_HOST');
  const clientId = given('DATABRICKS_CLIENT_ID');
  const clientSecret = given('DATABRICKS_CLIENT_SECRET');
  const deployed = Boolean(given('DATABRICKS_APP_PORT') || given('DATABRICKS_APP_NAME'));
  if (!deployed && !(host && clientId && clientSecret)) return undefined;
  if (host) {
    try {
      workspaceUrl(host);
    } catch (error) {
      throw new SettingsError(`DATABRICKS_HOST: ${(error as Error).message}`);
    }
  }
  const lifetime = given('CLAUDE_CODE_TOKEN_EXPIRY_SECONDS');
  const lifetimeSeconds = lifetime === undefined ? 3600 : /^[0-9]+$/.test(lifetime) ? Number(lifetime) : NaN;
  if (!Number.isSafeInteger(lifetimeSeconds) || lifetimeSeconds < 1) {
    throw new SettingsError(`CLAUDE_CODE_TOKEN_EXPIRY_SECONDS="${lifetime}" must be a whole number of seconds, at least 1: set it to the access token's lifetime (such as 3600), or leave it unset for 3600`);
  }
  const rotation = given('DEVBOX_TOKEN_ROTATION')?.toLowerCase();
  const fraction = rotation === undefined || rotation === 'on' ? 0.8 : rotation === 'off' ? 'off' : Number(rotation);
  if (fraction !== 'off' && !(fraction > 0 && fraction < 1)) {
    throw new SettingsError(`DEVBOX_TOKEN_ROTATION="${rotation}" must be the fraction of the token's lifetime after which a new one replaces it, above 0 and below 1 (such as 0.8), or "off"`);
  }
  const grace = given('DEVBOX_TOKEN_REVOKE_GRACE_SECONDS');
  const revokeGraceSeconds = grace === undefined ? 60 : Number(grace);
  if (!Number.isFinite(revokeGraceSeconds) || revokeGraceSeconds < 0) {
    throw new SettingsError(`DEVBOX_TOKEN_REVOKE_GRACE_SECONDS="${grace}" must be a number of seconds, 0 or more (default 60)`);
  }
  const routerPort = portFrom(given('DEVBOX_ROUTER_PORT'), 'DEVBOX_ROUTER_PORT', 3456);
  if (routerPort === 0) throw new SettingsError('DEVBOX_ROUTER_PORT="0" must be a port number between 1 and 65535 (default 3456)');
  return platformSettings({
    host, clientId, clientSecret,
    tokenLifetimeSeconds: lifetimeSeconds,
    servingEndpoint: given('DEVBOX_SERVING_ENDPOINT') ?? DEFAULT_SERVING_ENDPOINT,
    rotation: fraction,
    revokeGraceSeconds,
    routerPort,
    homeDir: homedir(),
    retryInitialMs: 1000,
    retryMaxMs: 60_000,
    callTimeoutMs: 30_000,
  });
}

/** DEVBOX_<KIND>_GIT_URL and its ref and interval, or undefined when the URL is not set. */
function gitSyncFrom(env: NodeJS.ProcessEnv, kind: 'TEMPLATES' | 'MANIFESTS'): GitSyncSettings | undefined {
  const url = env[`DEVBOX_${kind}_GIT_URL`]?.trim();
  if (!url) return undefined;
  const intervalName = `DEVBOX_${kind}_GIT_INTERVAL_SECONDS`;
  const interval = env[intervalName]?.trim();
  const intervalSeconds = interval ? Number(interval) : 60;
  if (!Number.isFinite(intervalSeconds) || intervalSeconds < 1) {
    throw new SettingsError(`${intervalName}="${interval}" must be a number of seconds, at least 1`);
  }
  const ref = env[`DEVBOX_${kind}_GIT_REF`]?.trim() || undefined;
  const path = env[`DEVBOX_${kind}_GIT_PATH`]?.trim().replace(/^(\.\/)+|\/+$/g, '') || undefined;
  return { url, ref, intervalSeconds, ...(path ? { path } : {}) };
}

/** DEVBOX_TEMPLATES_DIR; unset, with a templates repository: the service's own checkout (never a person's folder), else ./templates. */
function templatesDirFrom(env: NodeJS.ProcessEnv): string {
  if (env.DEVBOX_TEMPLATES_DIR) return resolve(env.DEVBOX_TEMPLATES_DIR);
  const git = gitSyncFrom(env, 'TEMPLATES');
  return git ? resolve(env.DEVBOX_DATA_DIR || '.devbox', 'gitops', 'templates', git.path ?? '') : resolve('templates');
}

/** A variable that turns something on (`1`) or off (`0`); unset or empty: the default. */
function switchFrom(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = env[name]?.trim();
  if (value === undefined || value === '') return fallback;
  if (value === '1' || value === '0') return value === '1';
  throw new SettingsError(`${name}="${value}" must be 1 (on) or 0 (off), or unset for the default (${fallback ? 'on' : 'off'} here)`);
}


/**
 * DEVBOX_PERSIST_TO, else the config's persistence.target, read into a PersistTarget (the target
 * itself is opened at start: src/persistence/service-open.ts); undefined when neither is set.
 */
export function persistFrom(env: NodeJS.ProcessEnv, config: Config): PersistSettings | undefined {
  const fromEnv = env.DEVBOX_PERSIST_TO?.trim();
  const from = fromEnv ? 'DEVBOX_PERSIST_TO' : 'persistence.target';
  const target = fromEnv || config.persistence.target?.trim();
  if (!target) return undefined;
  try {
    return { target: parsePersistTarget(target), from, retryInitialMs: 1000, retryMaxMs: 5 * 60_000 };
  } catch (error) {
    throw new SettingsError(`${from}="${target}" is not a place to keep work: ${(error as Error).message}`);
  }
}

/** runtimeFrom's answer, a bad variable as a SettingsError (exit code 2). */
function runtimeSettingsFrom(env: NodeJS.ProcessEnv, config: Config): RuntimeSettings {
  try {
    return runtimeFrom(env, config.runtime);
  } catch (error) {
    throw new SettingsError((error as Error).message);
  }
}

/** Deployed as a Databricks app: the platform sets DATABRICKS_APP_PORT and DATABRICKS_APP_NAME; either one says so. */
export function isDeployed(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.DATABRICKS_APP_PORT || env.DATABRICKS_APP_NAME);
}

/**
 * Settings from the environment (DEVBOX_*; DATABRICKS_APP_PORT when deployed as an app) and the
 * config file; `readConfig: false` leaves the file unread (the defaults), for checking it apart.
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, options: { readConfig?: boolean } = {}): Settings {
  const configFile = configFileFrom(env);
  const portVariable = env.DEVBOX_PORT ? 'DEVBOX_PORT' : env.DATABRICKS_APP_PORT ? 'DATABRICKS_APP_PORT' : undefined;
  const config = options.readConfig === false ? structuredClone(DEFAULT_CONFIG) : loadConfig(configFile);
  const settings: Settings = {
    host: env.DEVBOX_HOST || (env.DATABRICKS_APP_PORT ? '0.0.0.0' : '127.0.0.1'),
    port: portFrom(portVariable && env[portVariable], portVariable ?? 'DEVBOX_PORT', 8000),
    portVariable,
    manifestsDir: resolve(env.DEVBOX_MANIFESTS_DIR || 'manifests'),
    dataDir: resolve(env.DEVBOX_DATA_DIR || '.devbox'),
    configFile,
    editorBin: env.DEVBOX_EDITOR_BIN || undefined,
    requireIdentity: env.DEVBOX_REQUIRE_IDENTITY ? env.DEVBOX_REQUIRE_IDENTITY === '1' : isDeployed(env),
    allowedHosts: allowedHostsFrom(env.DEVBOX_ALLOWED_HOSTS),
    templatesDir: templatesDirFrom(env),
    gitSync: { templates: gitSyncFrom(env, 'TEMPLATES'), manifests: gitSyncFrom(env, 'MANIFESTS') },
    platform: platformFrom(env),
    runRouter: switchFrom(env, 'DEVBOX_ROUTER', isDeployed(env)),
    metrics: switchFrom(env, 'DEVBOX_METRICS', true),
    activityTracking: switchFrom(env, 'DEVBOX_ACTIVITY_TRACKING', true),
    runtime: runtimeSettingsFrom(env, config),
    config,
  };
  const persist = persistFrom(env, settings.config);
  return persist ? { ...settings, persist } : settings;
}
