// Entry point: `npm start`. Reads settings from the environment and serves until a signal.
import { loadSettings, SettingsError } from './config/settings.ts';
import { EditorNotFoundError } from './runtime/editor-binary.ts';
import { startService, StartupError } from './service.ts';

const log = (message: string) => console.log(`${new Date().toISOString()} ${message}`);

try {
  const settings = loadSettings();
  const service = await startService(settings, log);
  log(`devbox-controller serving on ${service.url} (manifests: ${settings.manifestsDir}, data: ${settings.dataDir})`);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    // Editors keep running on purpose (a restart of the service leaves people's sessions alone):
    // said in one line, with how to stop them instead.
    const stopEditors = process.env.DEVBOX_STOP_EDITORS_ON_EXIT === '1';
    const running = service.controller.reconciler.handles().size;
    log(`${signal}: shutting down; ${keptEditors(running, stopEditors)}`);
    await service.close({ stopEditors });
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
