// What a person does to a server: the client's call, the action in progress (so its row and its
// page both show it), and one notification with the outcome or the API's error.
import { useEffect, useState } from 'preact/hooks';
import { deleteServer, refreshAll, refreshServer, restartServer, startServer, stopServer } from './api/servers.ts';
import type { ServerRecord } from './api/types.ts';
import { notify, notifyError } from './notify.ts';

export type Action = 'start' | 'stop' | 'restart' | 'refresh' | 'delete';

/** The words of each action: the button, the button while it runs, the outcome. */
export const ACTION_WORDS: Record<Action, { label: string; progress: string; done: string; failed: string }> = {
  start: { label: 'Start', progress: 'Starting…', done: 'Started', failed: 'Could not start' },
  stop: { label: 'Stop', progress: 'Stopping…', done: 'Stopped', failed: 'Could not stop' },
  restart: { label: 'Restart', progress: 'Restarting…', done: 'Restarted', failed: 'Could not restart' },
  refresh: { label: 'Refresh', progress: 'Refreshing…', done: 'Refreshed', failed: 'Could not refresh' },
  delete: { label: 'Delete', progress: 'Deleting…', done: 'Deleted', failed: 'Could not delete' },
};

let pending = new Map<string, Action>();
let refreshingAll = false;
const listeners = new Set<() => void>();
const changed = () => listeners.forEach((listener) => listener());

/** The action running for each server id, and whether Refresh all runs; re-renders on change. */
export function usePending(): { pending: Map<string, Action>; refreshingAll: boolean } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return { pending, refreshingAll };
}

/** Which actions the status allows now. */
export function allowed(server: ServerRecord): Record<Action, boolean> {
  const s = server.status;
  return {
    start: s === 'stopped' || s === 'failed',
    stop: s === 'running' || s === 'starting' || s === 'failed',
    restart: s === 'running' || s === 'failed',
    refresh: true,
    delete: true,
  };
}

/** Runs the action; the notification names the server by `label` (its display name, or more where names collide). */
export async function runAction(server: ServerRecord, action: Action, label = server.name): Promise<boolean> {
  if (pending.has(server.id)) return false;
  pending = new Map(pending).set(server.id, action);
  changed();
  const words = ACTION_WORDS[action];
  try {
    switch (action) {
      case 'start':
      case 'restart': {
        const answer = await (action === 'start' ? startServer : restartServer)(server.id);
        // 202: still starting when the service stopped waiting; its message says so.
        notify(answer.data.status === 'running' ? `${words.done} ${label}` : answer.message, answer.data.status === 'running' ? 'success' : 'info');
        break;
      }
      case 'stop': {
        const answer = await stopServer(server.id);
        notify(answer.data.status === 'stopped' ? `${words.done} ${label}` : answer.message, answer.data.status === 'stopped' ? 'success' : 'info');
        break;
      }
      case 'refresh': {
        const answer = await refreshServer(server.id);
        notify(answer.updated
          ? `${words.done} ${label}: ${answer.old_status} → ${answer.new_status}`
          : `${words.done} ${label}: still ${answer.new_status}`);
        break;
      }
      case 'delete': {
        const answer = await deleteServer(server.id);
        notify(/deleted$/.test(answer.message) ? `${words.done} ${label}` : answer.message);
        break;
      }
    }
    return true;
  } catch (error) {
    notifyError(error, `${words.failed} ${label}`);
    return false;
  } finally {
    pending = new Map(pending);
    pending.delete(server.id);
    changed();
  }
}

export async function runRefreshAll(): Promise<void> {
  if (refreshingAll) return;
  refreshingAll = true;
  changed();
  try {
    const answer = await refreshAll();
    notify(`Refreshed ${answer.total_servers} server${answer.total_servers === 1 ? '' : 's'}, ${answer.updated} changed`);
  } catch (error) {
    notifyError(error, 'Could not refresh the servers');
  } finally {
    refreshingAll = false;
    changed();
  }
}
