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
    // Editors keep running: the next start adopts them (set DEVBOX_STOP_EDITORS_ON_EXIT=1 to stop them).
    const stopEditors = process.env.DEVBOX_STOP_EDITORS_ON_EXIT === '1';
    log(`${signal}: shutting down${stopEditors ? ' and stopping editors' : '; editors keep running'}`);
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
