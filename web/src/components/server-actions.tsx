// A server's action buttons (its row's and its page's), the Delete confirmation, and its links.
import { useState } from 'preact/hooks';
import { ACTION_WORDS, allowed, runAction, usePending, type Action } from '../actions.ts';
import { editorUrl } from '../api/servers.ts';
import type { ServerRecord } from '../api/types.ts';
import { Dialog } from './dialog.tsx';

export interface ServerActionsProps {
  server: ServerRecord;
  /** Links to the server's logs and editor (the row shows both; the page its own Logs link). */
  links?: boolean;
  /** Called once the server is deleted (the server page goes back to the list). */
  onDeleted?: () => void;
  /** Small buttons, as in a table row. */
  compact?: boolean;
}

const ORDER: Action[] = ['start', 'stop', 'restart', 'refresh', 'delete'];

export function ServerActions({ server, links = true, onDeleted, compact = true }: ServerActionsProps) {
  const size = compact ? ' small' : '';
  const { pending } = usePending();
  const [confirming, setConfirming] = useState(false);
  const running = pending.get(server.id);
  const can = allowed(server);

  const click = (action: Action) => {
    if (action === 'delete') setConfirming(true);
    else void runAction(server, action);
  };
  const confirmDelete = async () => {
    setConfirming(false);
    if (await runAction(server, 'delete')) onDeleted?.();
  };

  return (
    <div class="row-actions">
      {ORDER.map((action) => {
        // The running action stays visible; the others show only when the status allows them.
        if (!can[action] && running !== action) return null;
        const words = ACTION_WORDS[action];
        return (
          <button
            key={action}
            type="button"
            class={`${size}${action === 'delete' ? ' danger' : ''}`.trim() || undefined}
            disabled={running !== undefined}
            aria-busy={running === action ? 'true' : undefined}
            onClick={() => click(action)}
          >
            {running === action ? words.progress : words.label}
            <span class="visually-hidden"> {server.name}</span>
          </button>
        );
      })}
      {links && (
        <a class={`button${size}`} href={`#/logs/${encodeURIComponent(server.id)}`}>
          Logs<span class="visually-hidden"> for {server.name}</span>
        </a>
      )}
      {links && server.status === 'running' && server.port !== null && (
        <a class={`button${size} primary`} href={editorUrl(server.port)} target="_blank" rel="noopener noreferrer">
          Open<span class="visually-hidden"> {server.name}</span>
          <span aria-hidden="true"> ↗</span>
        </a>
      )}
      <Dialog title={`Delete ${server.name}?`} open={confirming} onClose={() => setConfirming(false)}>
        <p>
          This stops its editor and removes its manifest, its workspace folder and its logs. It cannot be undone.
        </p>
        <div class="dialog-buttons">
          <button type="button" onClick={() => setConfirming(false)} autoFocus>Cancel</button>
          <button type="button" class="danger" onClick={confirmDelete}>Delete</button>
        </div>
      </Dialog>
    </div>
  );
}
