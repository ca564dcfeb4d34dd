// A server page's Access panel: its owner and the people it is shared with; for its owner and the
// admins, a form to share it with one more person and a Revoke button for each. Says when the
// list has no effect here (no one signs in, or the config shares every server with everyone).
import { useEffect, useState } from 'preact/hooks';
import { getAccess, revokeAccess, shareServer, type AccessAnswer, type AccessView } from '../api/access.ts';
import type { ServerRecord } from '../api/types.ts';
import { notify, notifyError } from '../notify.ts';
import './access.css';

export function AccessPanel({ server, label }: { server: ServerRecord; label: string }) {
  const [view, setView] = useState<AccessView | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [person, setPerson] = useState('');
  const [busy, setBusy] = useState(false);
  // Read again when the record says the list or the owner changed (an edit elsewhere, a hand edit).
  const key = JSON.stringify([server.id, server.owner, server.shared_with]);
  useEffect(() => {
    let current = true;
    getAccess(server.id).then(
      (answer) => current && (setView(answer.data), setError(undefined)),
      (failure: Error) => current && setError(failure.message),
    );
    return () => {
      current = false;
    };
  }, [key]);

  const change = (call: () => Promise<AccessAnswer>, doing: string, after?: () => void) => {
    setBusy(true);
    call().then(
      (answer) => {
        setView(answer.data);
        if (answer.message) notify(answer.message);
        after?.();
      },
      (failure) => notifyError(failure, doing),
    ).finally(() => setBusy(false));
  };
  const share = (event: Event) => {
    event.preventDefault();
    const who = person.trim();
    if (who === '') return;
    change(() => shareServer(server.id, who), `sharing ${label} with ${who}`, () => setPerson(''));
  };

  return (
    <section aria-labelledby="section-access" class="card">
      <h2 id="section-access">Access</h2>
      {error && <p role="alert" class="inline-error">Could not load who has access: {error}</p>}
      {!view && !error && <p class="muted" aria-busy="true">Loading…</p>}
      {view && (
        <>
          {view.warning && <p class="muted">Sharing has no effect here: {view.warning}.</p>}
          <p>Owner: {view.owner ?? <span class="muted">nobody (only admins may change who has access)</span>}</p>
          {view.shared && <p>Shared with you: you may open and drive it; only its owner or an admin may delete it or change who has access.</p>}
          {view.shared_with.length === 0 ? (
            <p class="muted">Not shared with anyone.</p>
          ) : (
            <ul class="people" aria-label={`People ${label} is shared with`}>
              {view.shared_with.map((who) => (
                <li key={who}>
                  <span>{who}</span>
                  {view.can_change && (
                    <button type="button" class="small danger" disabled={busy} aria-label={`Revoke ${who}'s access`}
                      onClick={() => change(() => revokeAccess(server.id, who), `revoking ${who}'s access to ${label}`)}>
                      Revoke
                    </button>
                  )}
                </li>
              ))}
            </ul>
          )}
          {view.can_change && (
            <form class="share-form" onSubmit={share}>
              <label for={`share-${server.id}`}>Share with</label>
              <input id={`share-${server.id}`} type="text" autoComplete="off" spellcheck={false} maxLength={254}
                placeholder="email address or user id" value={person} onInput={(e) => setPerson(e.currentTarget.value)} />
              <button type="submit" disabled={busy || person.trim() === ''}>Share</button>
            </form>
          )}
        </>
      )}
    </section>
  );
}
