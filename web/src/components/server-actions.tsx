// A server's actions: on its page every button in a bar; in its table row the one action a person
// came for (Open a running editor, Start a stopped one) and a menu with the rest. Both ask before
// Delete. Accessible names carry the server's label, so equal display names stay apart.
import { useState } from 'preact/hooks';
import { ACTION_WORDS, allowed, runAction, usePending, type Action } from '../actions.ts';
import { editorUrl } from '../api/servers.ts';
import type { ServerRecord } from '../api/types.ts';
import { Dialog } from './dialog.tsx';
import { MenuButton, type MenuItem } from './menu.tsx';
import { sharedWithMe, useMe } from './shared-mark.tsx';

export interface ServerActionsProps {
  server: ServerRecord;
  /** How the server is named: "Hello", or "Hello (hello-2)" where display names collide. */
  label: string;
  /** Called once the server is deleted (the server page goes back to the list). */
  onDeleted?: () => void;
}

const ORDER: Action[] = ['start', 'stop', 'restart', 'refresh', 'delete'];

/** The action running for the server, what its status allows, and Delete behind a confirmation. */
function useServerActions({ server, label, onDeleted }: ServerActionsProps) {
  const { pending } = usePending();
  const [confirming, setConfirming] = useState(false);
  const running = pending.get(server.id);
  // Someone a server is shared with may use it, not delete it (under access: owner the service
  // refuses them): the dashboard does not offer it.
  const me = useMe();
  const notTheirs = me?.policy === 'owner' && !me.admin && sharedWithMe(server, me);
  const can = notTheirs ? { ...allowed(server), delete: false } : allowed(server);
  const act = (action: Action) => {
    if (action === 'delete') setConfirming(true);
    else void runAction(server, action, label);
  };
  const confirmDelete = async () => {
    setConfirming(false);
    if (await runAction(server, 'delete', label)) onDeleted?.();
  };
  const dialog = (
    <Dialog title={`Delete ${label}?`} open={confirming} onClose={() => setConfirming(false)}>
      <p>
        This stops its editor and removes its manifest, its workspace folder and its logs. It cannot be undone.
      </p>
      <div class="dialog-buttons">
        <button type="button" onClick={() => setConfirming(false)} autoFocus>Cancel</button>
        <button type="button" class="danger" onClick={confirmDelete}>Delete</button>
      </div>
    </Dialog>
  );
  return { running, can, act, dialog };
}

/** One action's button: its word (its progress word while it runs), then the server's label for assistive technology. */
function ActionButton({ action, label, running, onClick, extra = '' }: {
  action: Action; label: string; running: Action | undefined; onClick: () => void; extra?: string;
}) {
  const words = ACTION_WORDS[action];
  return (
    <button
      type="button"
      class={`${extra}${action === 'delete' ? ' danger' : ''}`.trim() || undefined}
      disabled={running !== undefined}
      aria-busy={running === action ? 'true' : undefined}
      onClick={onClick}
    >
      {running === action ? words.progress : words.label}
      <span class="visually-hidden"> {label}</span>
    </button>
  );
}

/** The server page's bar: every action the status allows; the running one stays, showing progress. */
export function ServerActions(props: ServerActionsProps) {
  const { running, can, act, dialog } = useServerActions(props);
  return (
    <div class="row-actions">
      {ORDER.map((action) => (can[action] || running === action) && (
        <ActionButton key={action} action={action} label={props.label} running={running} onClick={() => act(action)} />
      ))}
      {dialog}
    </div>
  );
}

/** The one action shown in a row: Start for a server that can start, else none. */
function primaryAction(server: ServerRecord): Action | undefined {
  return allowed(server).start ? 'start' : undefined;
}

/**
 * A table row's actions: the action in progress, or Open (running) or Start (stopped, failed),
 * then "More actions for {label}", a menu of the others (Logs among them).
 */
export function RowActions(props: ServerActionsProps) {
  const { server, label } = props;
  const { running, can, act, dialog } = useServerActions(props);
  const open = server.status === 'running' && server.port !== null;
  const primary = primaryAction(server);

  const items: MenuItem[] = [];
  for (const action of ORDER) {
    if (!can[action] || action === primary || action === 'delete') continue;
    items.push({ key: action, text: ACTION_WORDS[action].label, label: ACTION_WORDS[action].label, disabled: running !== undefined, onSelect: () => act(action) });
  }
  items.push({ key: 'logs', text: 'Logs', label: 'Logs', href: `#/logs/${encodeURIComponent(server.id)}` });
  items.push({ key: 'delete', text: 'Delete', label: 'Delete…', danger: true, disabled: running !== undefined, onSelect: () => act('delete') });

  return (
    <div class="row-actions">
      <span class="primary-slot">
        {running !== undefined ? (
          <ActionButton action={running} label={label} running={running} onClick={() => undefined} extra="small" />
        ) : open ? (
          <a class="button small primary" href={editorUrl(server.port!)} target="_blank" rel="noopener noreferrer">
            Open<span class="visually-hidden"> {label}</span>
            <span aria-hidden="true"> ↗</span>
          </a>
        ) : primary ? (
          <ActionButton action={primary} label={label} running={running} onClick={() => act(primary)} extra="small primary" />
        ) : null}
      </span>
      <MenuButton label={`More actions for ${label}`} class="small more" items={items}>
        <span aria-hidden="true">⋯</span>
      </MenuButton>
      {dialog}
    </div>
  );
}
