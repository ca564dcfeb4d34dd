// A server's status word as a badge (a shape and the word, never colour alone), then its reason.
import type { ServerRecord, StatusWord } from '../api/types.ts';

const MARK: Record<StatusWord, string> = {
  running: '●',
  starting: '◐',
  stopping: '◑',
  stopped: '○',
  failed: '✕',
};

export function StatusBadge({ status }: { status: StatusWord }) {
  return (
    <span class={`badge badge-${status}`}>
      <span aria-hidden="true" class="badge-mark">{MARK[status] ?? '●'}</span>
      {status}
    </span>
  );
}

/** True while the controller prepares the server (workspace, extensions): its status word says `stopped` or `starting`. */
export function preparing(server: ServerRecord): boolean {
  return server.phase === 'Pending' || server.phase === 'Provisioning';
}

/**
 * The status word, then the reason (the message in its title), as the table and the server page
 * show it; while the server is prepared, "preparing" says why nothing runs yet.
 */
export function ServerStatus({ server }: { server: ServerRecord }) {
  // A Pending server with a reason waits for something else (room to run): its reason says what.
  const busy = server.phase === 'Provisioning' || (server.phase === 'Pending' && !server.reason);
  return (
    <span class="status" title={[`phase ${server.phase}`, server.message].filter(Boolean).join(': ')}>
      <StatusBadge status={server.status} />
      {busy ? <span class="reason"> preparing{server.reason ? `: ${server.reason}` : '…'}</span>
        : server.reason && <span class="reason"> {server.reason}</span>}
    </span>
  );
}
