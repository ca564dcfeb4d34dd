// ~/.claude-code-router/config.json: the Databricks provider with the current access token, and
// the router's default route to it. What an operator added to the file (other providers, routes,
// options) is kept; a file that is not a JSON object is moved aside, never lost.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { servingUrl } from '../config/workspace-url.ts';
import { ensureSecretFile, secretFolder, writeSecretFile } from './secret-file.ts';

/** The provider entry the service owns in the router's configuration. */
export const PROVIDER_NAME = 'databricks';

export interface RouterTarget {
  host: string;
  endpoint: string;
  token: string;
  /** The router listens on 127.0.0.1 at this port. */
  port: number;
}

export interface RouterFiles {
  dir: string;
  config: string;
  pluginLog: string;
}

/** Where claude-code-router 1.x reads its configuration, under a home folder. */
export function routerFiles(homeDir: string): RouterFiles {
  const dir = join(homeDir, '.claude-code-router');
  return { dir, config: join(dir, 'config.json'), pluginLog: join(dir, 'plugin.log') };
}

/**
 * The configuration laid over an existing one (`existing`: the parsed file, or undefined): the
 * provider named "databricks" is replaced (its other fields, a transformer say, kept), the others
 * stay; Router.default points at it; HOST and PORT are the service's.
 */
export function routerConfig(existing: Record<string, unknown> | undefined, target: RouterTarget): Record<string, unknown> {
  const before = existing ?? {};
  const providers = Array.isArray(before.Providers) ? before.Providers : [];
  const isOurs = (entry: unknown) => isObject(entry) && entry.name === PROVIDER_NAME;
  const ours = {
    ...(providers.find(isOurs) as Record<string, unknown> | undefined),
    name: PROVIDER_NAME,
    api_base_url: servingUrl(target.host, target.endpoint),
    api_key: target.token,
    models: [target.endpoint],
  };
  return {
    ...before,
    LOG: typeof before.LOG === 'boolean' ? before.LOG : false,
    HOST: '127.0.0.1',
    PORT: target.port,
    Providers: [ours, ...providers.filter((entry) => !isOurs(entry))],
    Router: { ...(isObject(before.Router) ? before.Router : {}), default: `${PROVIDER_NAME},${target.endpoint}` },
  };
}

/** Makes the folder (0700) and the plugin log (empty, 0600) the router expects. */
export async function prepareRouterFolder(files: RouterFiles): Promise<void> {
  await secretFolder(files.dir);
  await ensureSecretFile(files.pluginLog);
}

/**
 * Writes the configuration atomically with mode 0600. Answers the path an unreadable earlier file
 * was moved to (mode 0600, beside it), so the caller can say so.
 */
export async function writeRouterConfig(files: RouterFiles, target: RouterTarget, now = new Date()): Promise<{ movedAside?: string }> {
  await prepareRouterFolder(files);
  let existing: Record<string, unknown> | undefined;
  let movedAside: string | undefined;
  let text: string | undefined;
  try {
    text = await fs.readFile(files.config, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text !== undefined && text.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (isObject(parsed)) existing = parsed;
    else {
      movedAside = `${files.config}.unreadable-${now.toISOString().replace(/[:.]/g, '-')}`;
      await fs.rename(files.config, movedAside);
      await fs.chmod(movedAside, 0o600);
    }
  }
  await writeSecretFile(files.config, `${JSON.stringify(routerConfig(existing, target), null, 2)}\n`);
  return movedAside ? { movedAside } : {};
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
