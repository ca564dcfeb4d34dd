// One connection pool per cluster and credentials. @kubernetes/client-node 2.0 builds a new undici
// Agent for every request (KubeConfig.applySecurityAuthentication → createDispatcher), so every
// call to the API server opened a TCP connection and made a TLS handshake of its own, and closed
// it: at a sync of 2,000 EditorServer objects, a status write each, that was 2,000 handshakes and a
// fifth of the service's CPU. Here the Agent made for a cluster and its credentials is kept and
// reused (keep-alive, as client-go does); a change of credentials (a rotated client certificate)
// makes a new one, and the old one closes once its requests are done.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';

interface Made {
  fingerprint: string;
  dispatcher: Dispatcher | undefined;
}

type MakeDispatcher = (cluster: { name?: string; server?: string; proxyUrl?: string } | null, agentOptions: Record<string, unknown>) => Dispatcher | undefined;

/** What identifies a connection's TLS: the cluster, its proxy, and the credentials' bytes. */
function fingerprintOf(cluster: Parameters<MakeDispatcher>[0], options: Record<string, unknown>): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([cluster?.name ?? '', cluster?.server ?? '', cluster?.proxyUrl ?? '']));
  for (const key of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
    const value = options[key];
    hash.update(`\0${key}=`);
    if (value === undefined) continue;
    if (typeof value === 'string' || Buffer.isBuffer(value)) hash.update(value);
    else hash.update(JSON.stringify(value));
  }
  return hash.digest('hex');
}

/**
 * Makes `config` reuse one dispatcher per cluster and credentials. True when the library has the
 * method this relies on; false (and nothing changed) when a version of it does not.
 */
export function poolConnections(config: KubeConfig): boolean {
  const target = config as unknown as { createDispatcher?: MakeDispatcher };
  const make = target.createDispatcher;
  if (typeof make !== 'function') return false;
  const pool = new Map<string, Made>();
  target.createDispatcher = (cluster, agentOptions) => {
    const key = JSON.stringify([cluster?.name ?? '', config.getCurrentUser()?.name ?? '']);
    const fingerprint = fingerprintOf(cluster, agentOptions);
    const held = pool.get(key);
    if (held?.fingerprint === fingerprint) return held.dispatcher;
    // New credentials: the old pool ends once what it carries is done.
    void held?.dispatcher?.close().catch(() => undefined);
    const made = { fingerprint, dispatcher: make.call(config, cluster, agentOptions) };
    pool.set(key, made);
    return made.dispatcher;
  };
  return true;
}
