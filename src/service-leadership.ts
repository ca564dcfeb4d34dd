// Leader election around the service (runtime.kubernetes.leaderElection): before the service
// starts, this replica waits for the Lease as a standby that answers only the liveness probe
// (GET /livez) and 503 elsewhere, so its readiness fails and the Kubernetes Service routes to the
// leader alone. Once it holds the Lease it closes the standby's port, and the caller starts the
// service on it.
import type { Server } from 'node:http';
import type { Settings } from './config/settings.ts';
import { apiError } from './core/error-catalogue.ts';
import { writeError, writeRawError } from './core/errors.ts';
import { createServer } from './core/http.ts';
import { realClock } from './core/clock.ts';
import { KubeClient } from './runtime/kubernetes/client.ts';
import { kubeLeaseStore, leaderIdentity, LeaderElector, LEASE_NAME } from './runtime/kubernetes/leader.ts';
import { StartupError } from './service-errors.ts';
import { leaderElectionOf } from './service-runtime.ts';
import { answerLiveness, isLiveness } from './service-http.ts';

export interface Leadership {
  elector: LeaderElector;
  /** True once this replica leads; false when `stop` came first (a SIGTERM while standing by). */
  acquired: Promise<boolean>;
  /** Stops waiting (a standby) and closes the standby's port. */
  stop(): Promise<void>;
}

/** Undefined unless the Kubernetes runtime runs with leader election; else the standby, waiting for the Lease. */
export function leadershipFor(settings: Settings, log: (message: string) => void): Leadership | undefined {
  const kubernetes = leaderElectionOf(settings);
  if (!kubernetes) return undefined;
  const { namespace, kubeconfig } = kubernetes;
  const client = new KubeClient(namespace, kubeconfig);
  const elector = new LeaderElector({
    store: kubeLeaseStore(client.config, namespace),
    identity: leaderIdentity(),
    clock: realClock,
    log,
  });
  log(`leader election: ${elector.identity} contends for the Lease ${namespace}/${LEASE_NAME}; standing by on ${settings.host}:${settings.port} until it leads`);
  const standby = standbyServer(elector);
  const waiting = new AbortController();
  const acquired = (async () => {
    await listen(standby, settings);
    const leads = await elector.acquire(waiting.signal);
    await close(standby);
    return leads;
  })();
  return {
    elector,
    acquired,
    stop: async () => {
      waiting.abort();
      await acquired.catch(() => undefined);
      await close(standby);
    },
  };
}

/** Answers the liveness probe, and every other request (and WebSocket) with 503 STANDBY. */
function standbyServer(elector: LeaderElector): Server {
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    if (isLiveness(req)) return answerLiveness(res, { status: 'standby', leader: elector.holder });
    writeError(res, apiError('STANDBY', { holder: elector.holder }));
  });
  server.on('upgrade', (_req, socket) => {
    socket.on('error', () => socket.destroy());
    writeRawError(socket, apiError('STANDBY', { holder: elector.holder }));
  });
  return server;
}

function listen(server: Server, settings: Settings): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new StartupError(`the standby could not bind port ${settings.port} on ${settings.host} (${error.code ?? error.message}): free the port, or set DEVBOX_PORT to another`));
    });
    server.listen(settings.port, settings.host, () => {
      server.removeAllListeners('error');
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
}
