// GET /config: the configuration clients need (extension groups, server limits, ui), from the config in use,
// and where it came from: the file, when it was read, what is wrong with the file now, and edits
// that wait for a restart. Also the config's section of GET /health.
import { Router } from 'express';
import type { LiveConfig } from '../../config/live-config.ts';
import type { HealthSection } from '../../core/health-section.ts';
import { formatProblem } from '../../core/yaml-problems.ts';
import { allowedGitSchemes } from '../../workspace/git-source.ts';

/** The archives a workspace upload may be (POST /servers/create-with-workspace, clone-workspace). */
const ARCHIVE_TYPES = ['.zip'];

/** A server created without restart_policy gets this one (spec.restartPolicy unset). */
const DEFAULT_RESTART_POLICY = 'Never';

/** `localMode`: the service runs for one person (no identity required), which allows more git URL schemes by default. */
export function configRouter(live: LiveConfig, localMode: boolean): Router {
  return Router().get('/config', (_req, res) => {
    const config = live.current;
    const { file, loadedAt, errors, pendingRestart } = live.state();
    res.json({
      status: 'success',
      data: {
        extension_groups: Object.fromEntries(Object.entries(config.extensionGroups).map(([key, group]) => [key, {
          name: group.name, description: group.description, extensions: group.extensions, user_settings: group.user_settings,
        }])),
        server: {
          port_range: { min: config.ports.min, max: config.ports.max },
          start_timeout_seconds: config.editor.startTimeoutSeconds,
          ready_timeout_seconds: config.editor.readyTimeoutSeconds,
          stop_grace_seconds: config.editor.stopGraceSeconds,
          default_restart_policy: DEFAULT_RESTART_POLICY,
          git_schemes: allowedGitSchemes(config.workspace, localMode),
          clone_timeout_seconds: config.workspace.cloneTimeoutSeconds,
          max_upload_mb: config.workspace.maxUploadMb,
        },
        ui: {
          title: config.ui.title,
          default_extension_groups: config.ui.defaultExtensionGroups,
          max_upload_mb: config.workspace.maxUploadMb,
          archive_types: ARCHIVE_TYPES,
        },
        packaged_assets: config.packagedAssets,
      },
      source: {
        file: file ?? null,
        loaded_at: loadedAt.toISOString(),
        errors: errors.map((e) => ({ file: e.file, line: e.line ?? null, column: e.column ?? null, problem: e.problem })),
        pending_restart: pendingRestart,
      },
    });
  });
}

/** GET /health's `config`: the file, when the config in use was read, and the file's problems (which make the service "degraded"). */
export function configHealthSection(live: LiveConfig): HealthSection {
  return {
    read() {
      const { file, loadedAt, errors, pendingRestart } = live.state();
      return {
        file: file ?? null,
        loaded_at: loadedAt.toISOString(),
        errors: errors.map(formatProblem),
        ...(pendingRestart.length > 0 ? { pending_restart: pendingRestart } : {}),
      };
    },
    // Each names the file: "devbox.config.yaml:3:8: ports.min: must be >= 1024".
    problems: () => live.state().errors.map(formatProblem),
  };
}
