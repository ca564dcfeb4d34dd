// A server's status word as a badge (a shape and the word, never colour alone), then its reason.
import type { ServerRecord, StatusWord } from '../api/types.ts';

const MARK: Record<StatusWord, string> = {
  running: '●',
  starting: '◐',
  provisioning: '◐',
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

/** The status word, then the reason (the message in its title), as the table and the server page show it. */
export function ServerStatus({ server }: { server: ServerRecord }) {
  return (
    <span class="status" title={[`phase ${server.phase}`, server.message].filter(Boolean).join(': ')}>
      <StatusBadge status={server.status} />
      {server.reason && <span class="reason"> {server.reason}</span>}
    </span>
  );
}
