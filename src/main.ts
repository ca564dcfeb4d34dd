// Entry point: `npm start`. Reads settings from the environment and serves until a signal. With
// leader election (runtime.kubernetes.leaderElection) it first waits for the Lease as a standby,
// and exits with status 1 when it loses the Lease, leaving the editors to the next leader.
import { manifestsNamespace } from './config/runtime-config.ts';
import { loadSettings, SettingsError } from './config/settings.ts';
import { EditorNotFoundError } from './runtime/editor-binary.ts';
import type { ShutdownSummary } from './persistence/service-persistence.ts';
import { startService, StartupError } from './service.ts';
import { leaderElectionOf } from './service-runtime.ts';

const log = (message: string) => console.log(`${new Date().toISOString()} ${message}`);

/** The platform gives an app 15 s after SIGTERM: the final snapshots get 12 of them, closing the rest. */
const FINAL_SNAPSHOTS_MS = 12_000;

try {
  const settings = loadSettings();
  // Loaded only with leader election: it brings the Kubernetes client, which a local service never needs.
  const leadership = leaderElectionOf(settings)
    ? (await import('./service-leadership.ts')).leadershipFor(settings, log)
    : undefined;
  if (leadership) {
    const standingBy = () => void leadership.stop();
    process.once('SIGINT', standingBy);
    process.once('SIGTERM', standingBy);
    if (!(await leadership.acquired)) process.exit(0); // a signal while standing by
    process.off('SIGINT', standingBy);
    process.off('SIGTERM', standingBy);
    // Another replica may lead from the renew deadline on: this one must stop managing editors at
    // once, and cannot close in order (the API server may be gone). The editors keep running and
    // the next leader adopts them; the kubelet starts this container again, as a standby.
    void leadership.elector.lost.then((reason) => {
      log(`leader election: lost the Lease (${reason}): exiting with status 1; the editors keep running for the next leader`);
      process.exit(1);
    });
  }
  const service = await startService(settings, log);
  const namespace = manifestsNamespace(settings.runtime);
  const manifests = namespace !== undefined ? `the EditorServer objects of namespace ${namespace}` : settings.manifestsDir;
  log(`devbox-controller serving on ${service.url} (manifests: ${manifests}, data: ${settings.dataDir})`);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    // Editors keep running on purpose (a restart of the service leaves people's sessions alone):
    // said in one line, with how to stop them instead.
    const stopEditors = process.env.DEVBOX_STOP_EDITORS_ON_EXIT === '1';
    const running = service.index.running().length;
    log(`${signal}: shutting down; ${keptEditors(running, stopEditors)}`);
    // Every running server's last changes are kept before anything closes (only what changed is uploaded).
    if (service.persistence) {
      const summary = await service.persistence.snapshotAll('shutdown', FINAL_SNAPSHOTS_MS).catch((error: Error) => error);
      log(summary instanceof Error ? `${signal}: the final snapshots failed: ${summary.message}` : finalSnapshots(signal, summary));
    }
    await service.close({ stopEditors });
    // Handed back after the service stopped managing, so a standby takes over at once.
    await leadership?.elector.release();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
} catch (error) {
  if (error instanceof SettingsError || error instanceof EditorNotFoundError || error instanceof StartupError) {
    console.error(`devbox-controller: ${error.message}`);
    process.exit(2);
  }
  throw error;
}

/** What becomes of the running editors at shutdown, in words. */
function keptEditors(running: number, stopEditors: boolean): string {
  const editors = `${running} editor${running === 1 ? '' : 's'}`;
  if (stopEditors) return `stopping ${editors} (DEVBOX_STOP_EDITORS_ON_EXIT=1)`;
  if (running === 0) return 'no editor is running';
  return `${editors} keep${running === 1 ? 's' : ''} running and the next start adopts ${running === 1 ? 'it' : 'them'}; ` +
    'to stop editors with the service, start it with DEVBOX_STOP_EDITORS_ON_EXIT=1';
}

/** The final snapshots in one line: what was kept, what failed, how long it took. */
function finalSnapshots(signal: string, summary: ShutdownSummary): string {
  const { servers, saved, unchanged, failed, uploadedBytes, seconds, declared } = summary;
  const mb = (uploadedBytes / 1024 / 1024).toFixed(1);
  return `${signal}: final snapshots of ${servers} server${servers === 1 ? '' : 's'} in ${seconds.toFixed(1)} s: ${saved} saved (${mb} MB uploaded), ${unchanged} unchanged; declared state of ${declared} server${declared === 1 ? '' : 's'} written`
    + (failed.length > 0 ? `, ${failed.length} failed: ${failed.join('; ')}` : '');
}
