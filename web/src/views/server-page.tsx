// A server's page (#/servers/{id}): its status and actions, conditions and provisioning progress,
// extensions, snapshots, manifest errors, the manifest as written, its history (server-history.tsx)
// and its recent events.
import { useEffect, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { getEvents, getManifest, snapshotServer } from '../api/servers.ts';
import type { Condition, PersistenceState, Resources, ServerEvent, ServerRecord } from '../api/types.ts';
import { formatDuration, formatMb, formatPercent } from '../components/format.ts';
import { ServerActions } from '../components/server-actions.tsx';
import { nameOf, ServerNameText } from '../components/names.tsx';
import { preparing, StatusBadge } from '../components/status.tsx';
import { RelativeTime } from '../components/time.tsx';
import { useNow, useServers } from '../store.ts';
import { notify, notifyError } from '../notify.ts';
import { ServerHistory } from './server-history.tsx';
import { uptimeSeconds } from './servers.tsx';
import { AccessPanel } from './access-panel.tsx';
import { UsagePanel } from './usage-panel.tsx';
import { DevcontainerPanel } from '../components/devcontainer-panel.tsx';

export function ServerPage({ id }: { id: string }) {
  const { servers, loaded } = useServers();
  const server = servers.get(id);
  if (!loaded) return <p class="empty" aria-busy="true">Loading…</p>;
  if (!server) {
    return (
      <div class="empty">
        <h1 tabIndex={-1}>Server not found</h1>
        <p>No server has the id <code>{id}</code>: it may have been deleted.</p>
        <p><a href="#/">Back to the servers</a></p>
      </div>
    );
  }
  return <ServerDetails server={server} servers={servers} />;
}

/** What changes when the controller acts: stats (CPU, memory) alone do not refetch events. */
function changeKey(s: ServerRecord): string {
  return JSON.stringify([s.phase, s.reason, s.message, s.pid, s.generation, s.observed_generation, s.extension_status, s.manifest_errors, s.conditions, s.persistence?.last_snapshot_id]);
}

/** Fetches with the client while `key` changes (debounced), keeping the last answer meanwhile. */
function useFetched<T>(load: () => Promise<T>, key: string): { value?: T; error?: string } {
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  useEffect(() => {
    let current = true;
    const timer = setTimeout(() => {
      load().then(
        (value) => current && setState({ value }),
        (error: Error) => current && setState((s) => ({ value: s.value, error: error.message })),
      );
    }, state.value === undefined ? 0 : 250);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [key]);
  return state;
}

function ServerDetails({ server, servers }: { server: ServerRecord; servers: Map<string, ServerRecord> }) {
  const name = nameOf(server, servers);
  const now = useNow();
  const key = `${server.id}:${changeKey(server)}`;
  const events = useFetched(() => getEvents(server.id), key);
  const manifest = useFetched(() => getManifest(server.id), key);
  const uptime = uptimeSeconds(server, now);
  const conditions = server.conditions ?? [];
  const progress = provisioning(server, conditions);

  return (
    <>
      <p class="crumbs"><a href="#/">Servers</a> <span aria-hidden="true">›</span> {name.label}</p>
      <div class="page-head">
        <div>
          <h1 tabIndex={-1}><ServerNameText name={name} /></h1>
          <p class="status-line">
            <StatusBadge status={server.status} />
            {server.reason && <span class="reason"> {server.reason}</span>}
            {server.message && <span class="muted"> — {server.message}</span>}
          </p>
        </div>
        <div class="toolbar">
          <ServerActions server={server} label={name.label} onDeleted={() => (location.hash = '#/')} />
          <a class="button" href={`#/logs/${encodeURIComponent(server.id)}`}>Logs</a>
          {server.status === 'running' && server.port !== null && (
            <a class="button primary" href={`vscode/${server.port}/`} target="_blank" rel="noopener noreferrer">
              Open editor<span aria-hidden="true"> ↗</span>
            </a>
          )}
        </div>
      </div>

      <dl class="facts">
        <Fact term="Phase">{server.phase}</Fact>
        <Fact term="Port">{server.port ?? '—'}</Fact>
        <Fact term="PID">{server.pid ?? '—'}</Fact>
        <Fact term="Uptime">{uptime === null ? '—' : formatDuration(uptime)}</Fact>
        <Fact term="Started"><RelativeTime value={server.start_time} /></Fact>
        <Fact term="CPU">{server.start_time !== null ? formatPercent(server.cpu_percent) : '—'}</Fact>
        <Fact term="Memory">{server.start_time !== null ? formatMb(server.memory_mb) : '—'}</Fact>
        <Fact term="Restart policy">{server.restart_policy}</Fact>
        <Fact term="Resources">{resourcesText(server.resources)}</Fact>
        <Fact term="Owner">{server.owner ?? '—'}</Fact>
        <Fact term="Manifest"><code>{server.manifest}.yaml</code></Fact>
        <Fact term="Workspace"><code class="wrap">{server.workspace_path ?? '—'}</code></Fact>
        <Fact term="Generation">
          {server.generation ?? '—'}
          {server.generation !== null && server.observed_generation !== server.generation && <span class="muted"> (controller at {server.observed_generation ?? '—'})</span>}
        </Fact>
      </dl>

      {progress && (
        <div class="progress-box">
          <label>
            {progress.label}
            {progress.done === undefined ? <progress /> : <progress value={progress.done} max={progress.total} />}
          </label>
          {progress.detail && <p class="muted">{progress.detail}</p>}
        </div>
      )}

      <UsagePanel server={server} />

      <Section title="Conditions">
        {conditions.length === 0 ? (
          <p class="muted">No conditions reported yet: the controller adds them as it prepares and runs the editor.</p>
        ) : (
          <div class="table-scroll">
            <table>
              <thead><tr><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Message</th><th scope="col">Changed</th></tr></thead>
              <tbody>
                {conditions.map((c) => (
                  <tr key={c.type}>
                    <td>{c.type}</td>
                    <td><span class={`cond cond-${c.status.toLowerCase()}`}>{c.status}</span></td>
                    <td>{c.reason ?? '—'}</td>
                    <td class="message">{c.message ?? '—'}</td>
                    <td><RelativeTime value={c.lastTransitionTime} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>

      <Section title="Extensions">
        <ExtensionsTable server={server} />
      </Section>

      <DevcontainerPanel server={server} />

      <AccessPanel server={server} label={name.label} />

      {server.persistence && (
        <Section title="Snapshots">
          <Snapshots id={server.id} label={name.label} state={server.persistence} />
        </Section>
      )}

      {server.manifest_errors && server.manifest_errors.length > 0 && (
        <Section title="Manifest errors">
          <p>The manifest file <code>{server.manifest}.yaml</code> is invalid; the server keeps its last valid state until the file is fixed.</p>
          <ul class="problems">
            {server.manifest_errors.map((problem, i) => <li key={i}>{problem}</li>)}
          </ul>
        </Section>
      )}

      <Section title="Manifest">
        {manifest.error && <p role="alert" class="inline-error">Could not load the manifest: {manifest.error}</p>}
        {manifest.value === undefined && !manifest.error ? (
          <p class="muted" aria-busy="true">Loading…</p>
        ) : (
          <pre class="yaml" tabIndex={0} aria-label="Manifest YAML">{manifest.value}</pre>
        )}
      </Section>

      <ServerHistory id={server.id} changeKey={key} />

      <Section title="Events">
        {events.error && <p role="alert" class="inline-error">Could not load the events: {events.error}</p>}
        {events.value === undefined && !events.error ? (
          <p class="muted" aria-busy="true">Loading…</p>
        ) : events.value && events.value.length > 0 ? (
          <EventsTable events={events.value} />
        ) : (
          !events.error && <p class="muted">No events yet.</p>
        )}
      </Section>
    </>
  );
}

/** Where the server's work is kept: its last snapshot, what went wrong, and keeping it now. */
function Snapshots({ id, label, state }: { id: string; label: string; state: PersistenceState }) {
  const [busy, setBusy] = useState(false);
  const keep = () => {
    setBusy(true);
    snapshotServer(id).then((answer) => notify(answer.message), (error) => notifyError(error, `keeping ${label}'s work`)).finally(() => setBusy(false));
  };
  return (
    <>
      <dl class="facts">
        <Fact term="Last snapshot"><RelativeTime value={state.last_snapshot_at} /></Fact>
        <Fact term="Files">{state.files ?? '—'}</Fact>
        <Fact term="Size">{state.size_bytes === null ? '—' : state.size_bytes < 1024 * 1024 ? `${Math.ceil(state.size_bytes / 1024)} KB` : formatMb(state.size_bytes / (1024 * 1024))}</Fact>
        <Fact term="Now">{state.in_progress === 'snapshot' ? 'taking a snapshot' : state.in_progress === 'restore' ? 'restoring' : '—'}</Fact>
      </dl>
      {state.last_error && <p role="alert" class="inline-error">The last snapshot failed: {state.last_error}</p>}
      <p>
        <button type="button" onClick={keep} disabled={busy || state.in_progress !== null} aria-label={`Keep ${label}'s work now`}>
          {busy ? 'Keeping…' : 'Keep now'}
        </button>
      </p>
    </>
  );
}

/** "requests cpu 1, memory 2Gi; limits memory 4Gi", or a dash when the manifest gives none. */
function resourcesText(resources: Resources | null | undefined): string {
  const part = (label: string, amounts: Resources['requests']) => {
    const given = Object.entries(amounts ?? {}).map(([name, value]) => `${name} ${value}`);
    return given.length > 0 ? [`${label} ${given.join(', ')}`] : [];
  };
  const text = [...part('requests', resources?.requests), ...part('limits', resources?.limits)].join('; ');
  return text || '—';
}

function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function Section({ title, children }: { title: string; children: ComponentChildren }) {
  const id = `section-${title.toLowerCase().replace(/\W+/g, '-')}`;
  return (
    <section aria-labelledby={id} class="card">
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

function ExtensionsTable({ server }: { server: ServerRecord }) {
  const states = new Map(server.extension_status.map((e) => [e.id.toLowerCase(), e]));
  const ids = [...new Set([...server.extensions, ...server.extension_status.map((e) => e.id)])];
  if (ids.length === 0) return <p class="muted">No extensions. Add some when creating a server, or through its extension groups.</p>;
  return (
    <div class="table-scroll">
      <table>
        <thead><tr><th scope="col">Extension</th><th scope="col">State</th><th scope="col">Version</th><th scope="col">Error</th></tr></thead>
        <tbody>
          {ids.map((id) => {
            const state = states.get(id.toLowerCase().replace(/@.*$/, '')) ?? states.get(id.toLowerCase());
            const word = state?.state ?? 'Pending';
            return (
              <tr key={id}>
                <td><code>{id}</code></td>
                <td><span class={`ext ext-${String(word).toLowerCase()}`}>{word}</span></td>
                <td>{state?.version ?? '—'}</td>
                <td class="message">{state?.message ?? ''}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function EventsTable({ events }: { events: ServerEvent[] }) {
  // Newest first: what just happened is what a person looks for.
  const rows = [...events].reverse();
  return (
    <div class="table-scroll">
      <table>
        <thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Reason</th><th scope="col">Message</th></tr></thead>
        <tbody>
          {rows.map((e, i) => (
            <tr key={`${e.time}-${i}`} class={e.type === 'Warning' ? 'warning' : undefined}>
              <td class="nowrap"><RelativeTime value={e.time} /></td>
              <td>{e.type === 'Warning' ? <span class="ev-warning"><span aria-hidden="true">⚠ </span>Warning</span> : e.type}</td>
              <td>{e.reason}</td>
              <td class="message">{e.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * How far provisioning has got, from the conditions the controller sets on the way (each True is
 * a step done) and their messages; undefined once the server is settled.
 */
function provisioning(server: ServerRecord, conditions: Condition[]): { label: string; done?: number; total: number; detail?: string } | undefined {
  // The status word says `stopped` while a server is prepared: the phase tells the progress.
  if (server.status !== 'starting' && !preparing(server)) return undefined;
  const steps = conditions.filter((c) => c.type !== 'Ready');
  const done = steps.filter((c) => c.status === 'True').length;
  const waiting = steps.find((c) => c.status !== 'True');
  const label = preparing(server) ? 'Provisioning' : 'Starting the editor';
  return {
    label,
    done: steps.length === 0 ? undefined : done,
    total: Math.max(steps.length, 1),
    detail: waiting?.message ?? server.message ?? undefined,
  };
}
