// Notifications: one message per action's result, shown in the shell's `Notifications` region
// (successes) or as an alert (errors, with the API's own message).
import { ApiError } from './api/http.ts';

export interface Notice {
  id: number;
  kind: 'success' | 'error' | 'info';
  text: string;
}

type Listener = (notices: Notice[]) => void;
let notices: Notice[] = [];
let next = 1;
const listeners = new Set<Listener>();

export function notify(text: string, kind: Notice['kind'] = 'success'): void {
  const notice = { id: next++, kind, text };
  notices = [...notices.slice(-4), notice];
  for (const listener of listeners) listener(notices);
  // Errors stay until dismissed; the rest fade after a while.
  if (kind !== 'error') setTimeout(() => dismiss(notice.id), 6000);
}

/** Shows an error: the API's message as it gave it, else the error's own. */
export function notifyError(error: unknown, doing?: string): void {
  const message = error instanceof ApiError || error instanceof Error ? error.message : String(error);
  notify(doing ? `${doing}: ${message}` : message, 'error');
}

export function dismiss(id: number): void {
  notices = notices.filter((n) => n.id !== id);
  for (const listener of listeners) listener(notices);
}

export function subscribeNotices(listener: Listener): () => void {
  listeners.add(listener);
  listener(notices);
  return () => listeners.delete(listener);
}
