// A server's history on its page: who changed what, when, through which door and how it ended,
// from the audit trail (newest first, a page at a time, "Show older" for more). Looked at again
// when the server's record changes, so an action just taken shows up.
import { useEffect, useState } from 'preact/hooks';
import { getServerAudit, type AuditEntry } from '../api/audit.ts';
import { RelativeTime } from '../components/time.tsx';

const ACTIONS: Record<string, string> = {
  'create': 'created', 'edit': 'edited', 'start': 'started', 'stop': 'stopped', 'restart': 'restarted', 'delete': 'deleted',
  'undelete': 'brought back', 'snapshot': 'snapshot taken', 'snapshot-restore': 'snapshot put back', 'share': 'shared',
  'revoke': 'access revoked', 'idle-stop': 'stopped for idleness', 'capacity-stop': 'stopped to make room', 'restore': 'work restored',
};

const DOORS: Record<string, string> = { api: 'API', dashboard: 'dashboard', manifest: 'manifest file', cluster: 'cluster object', controller: 'controller' };

/** The history of server `id`; `changeKey` moves whenever the server's record does. */
export function ServerHistory({ id, changeKey }: { id: string; changeKey: string }) {
  const [entries, setEntries] = useState<AuditEntry[] | undefined>(undefined);
  const [older, setOlder] = useState<string | null>(null);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(false);

  useEffect(() => {
    let current = true;
    const timer = setTimeout(() => {
      getServerAudit(id).then((page) => {
        if (!current) return;
        setEntries(page.entries);
        setOlder(page.next_cursor);
        setError(undefined);
      }, (failure: Error) => current && setError(failure.message));
    }, entries === undefined ? 0 : 250);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [id, changeKey]);

  const more = () => {
    if (older === null) return;
    setLoading(true);
    getServerAudit(id, older).then((page) => {
      setEntries((shown) => [...(shown ?? []), ...page.entries]);
      setOlder(page.next_cursor);
    }, (failure: Error) => setError(failure.message)).finally(() => setLoading(false));
  };

  return (
    <section aria-labelledby="section-history" class="card">
      <h2 id="section-history">History</h2>
      {error && <p role="alert" class="inline-error">Could not load the history: {error}</p>}
      {entries === undefined && !error && <p class="muted" aria-busy="true">Loading…</p>}
      {entries !== undefined && entries.length === 0 && <p class="muted">Nothing recorded yet.</p>}
      {entries !== undefined && entries.length > 0 && (
        <div class="table-scroll">
          <table aria-label="History">
            <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Through</th><th scope="col">Outcome</th><th scope="col">Detail</th></tr></thead>
            <tbody>
              {entries.map((entry) => (
                <tr key={entry.seq}>
                  <td><RelativeTime value={entry.time} /></td>
                  <td>{entry.actor}</td>
                  <td>{ACTIONS[entry.action] ?? entry.action}</td>
                  <td>{DOORS[entry.door] ?? entry.door}</td>
                  <td>{entry.outcome === 'ok' ? 'done' : `${entry.outcome}${entry.code ? ` (${entry.code})` : ''}`}</td>
                  <td class="message">{entry.detail ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {older !== null && (
        <p><button type="button" onClick={more} disabled={loading}>Show older</button></p>
      )}
    </section>
  );
}
