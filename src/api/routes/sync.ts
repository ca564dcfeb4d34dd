// POST /sync: the GitOps repositories (templates, manifests) synced now instead of at the next
// interval; answers once both are done, or 202 when the wait ends first.
import { Router } from 'express';
import type { GitOps, SyncStates } from '../../gitops/gitops.ts';

/** How long POST /sync waits for the syncs; they go on after it answers. */
const SYNC_WAIT_MS = 60_000;

export function syncRouter(gitops: GitOps, waitMs = SYNC_WAIT_MS): Router {
  return Router().post('/sync', async (_req, res) => {
    if (!gitops.configured) {
      res.json({
        status: 'success',
        message: 'no git repository to sync: set DEVBOX_TEMPLATES_GIT_URL (the templates folder) or DEVBOX_MANIFESTS_GIT_URL (the manifests) and restart the service',
        data: gitops.states(),
      });
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), waitMs)));
    const done = await Promise.race([gitops.syncNow(), timedOut]);
    clearTimeout(timer);
    if (done === undefined) {
      res.status(202).json({ status: 'success', message: `still syncing after ${waitMs / 1000} s: watch git_sync in GET /health`, data: gitops.states() });
      return;
    }
    res.json({ status: 'success', message: summary(done), data: done });
  });
}

/** "templates at 1a2b3c4d5e6f; manifests failed: …" */
function summary(states: SyncStates): string {
  const parts: string[] = [];
  for (const [what, state] of [['templates', states.templates], ['manifests', states.manifests]] as const) {
    if (!state) continue;
    if (state.last_error) parts.push(`${what} failed (${state.commit ? `still at ${state.commit.slice(0, 12)}` : 'nothing synced yet'}): ${state.last_error}`);
    else parts.push(`${what} at ${state.commit?.slice(0, 12)}`);
  }
  const skipped = states.manifests?.problems.length ?? 0;
  if (skipped > 0) parts.push(`${skipped} manifest file${skipped === 1 ? '' : 's'} skipped (see data.manifests.problems)`);
  return parts.join('; ');
}
