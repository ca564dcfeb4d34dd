// The server table (#/): every server from the watch stream, sorted and filtered, with its actions.
import { useMemo, useState } from 'preact/hooks';
import type { ServerRecord } from '../api/types.ts';
import { runRefreshAll, usePending } from '../actions.ts';
import { formatDuration, formatMb, formatPercent } from '../components/format.ts';
import { nameOf, ServerNameText, type ServerName } from '../components/names.tsx';
import { RowActions } from '../components/server-actions.tsx';
import { ServerStatus } from '../components/status.tsx';
import { useNow, useServers } from '../store.ts';
import { CreateServerDialog } from './create-dialog.tsx';
import { CapacitySummary } from '../components/capacity.tsx';

type Column = 'name' | 'status' | 'port' | 'pid' | 'uptime' | 'cpu' | 'memory' | 'extensions' | 'owner';

const COLUMNS: { key: Column; label: string; numeric?: boolean }[] = [
  { key: 'name', label: 'Name' },
  { key: 'status', label: 'Status' },
  { key: 'port', label: 'Port', numeric: true },
  { key: 'pid', label: 'PID', numeric: true },
  { key: 'uptime', label: 'Uptime', numeric: true },
  { key: 'cpu', label: 'CPU', numeric: true },
  { key: 'memory', label: 'Memory', numeric: true },
  { key: 'extensions', label: 'Extensions', numeric: true },
  { key: 'owner', label: 'Owner' },
];

/** Seconds the editor has run, from its start time, as of `now`. */
export function uptimeSeconds(server: ServerRecord, now: number): number | null {
  if (!server.start_time) return null;
  return Math.max(0, (now - Date.parse(server.start_time)) / 1000);
}

const STATUS_ORDER = ['running', 'starting', 'provisioning', 'stopping', 'failed', 'stopped'];

function sortValue(server: ServerRecord, column: Column): string | number | null {
  switch (column) {
    case 'name': return server.name.toLowerCase();
    case 'status': return STATUS_ORDER.indexOf(server.status);
    case 'port': return server.port;
    case 'pid': return server.pid;
    // The start time orders uptimes without the clock: an earlier start is a longer uptime.
    case 'uptime': return server.start_time ? -Date.parse(server.start_time) : null;
    case 'cpu': return server.start_time ? server.cpu_percent : null;
    case 'memory': return server.start_time ? server.memory_mb : null;
    case 'extensions': return server.extensions.length;
    case 'owner': return server.owner?.toLowerCase() ?? null;
  }
}

function compare(a: ServerRecord, b: ServerRecord, column: Column, direction: 1 | -1): number {
  const x = sortValue(a, column);
  const y = sortValue(b, column);
  // Empty values last, whichever the direction.
  if (x === null && y !== null) return 1;
  if (y === null && x !== null) return -1;
  if (x !== null && y !== null && x !== y) return (x < y ? -1 : 1) * direction;
  // Equal names: by manifest name, which tells them apart on screen.
  return a.name.localeCompare(b.name) || a.manifest.localeCompare(b.manifest) || a.id.localeCompare(b.id);
}

function matches(server: ServerRecord, filter: string): boolean {
  if (!filter) return true;
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const text = [server.name, server.manifest, server.status, server.reason ?? '', server.owner ?? ''].join(' ').toLowerCase();
  return words.every((word) => text.includes(word));
}

// Kept while the person moves between views.
let remembered = { column: 'name' as Column, direction: 1 as 1 | -1, filter: '' };

export function ServersView() {
  const { servers, loaded } = useServers();
  const { refreshingAll } = usePending();
  const now = useNow();
  const [sort, setSort] = useState({ column: remembered.column, direction: remembered.direction });
  const [filter, setFilter] = useState(remembered.filter);
  const [creating, setCreating] = useState(false);
  remembered = { ...sort, filter };

  const rows = useMemo(
    () => [...servers.values()].filter((s) => matches(s, filter)).sort((a, b) => compare(a, b, sort.column, sort.direction)),
    [servers, filter, sort],
  );
  const empty = loaded && servers.size === 0;

  const sortBy = (column: Column) =>
    setSort((current) => ({ column, direction: current.column === column ? (current.direction === 1 ? -1 : 1) : 1 }));

  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Editor servers</h1>
        <div class="toolbar">
          {!empty && (
            <input
              type="search"
              class="filter"
              aria-label="Filter servers"
              placeholder="Filter servers"
              value={filter}
              onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
            />
          )}
          <button type="button" onClick={() => void runRefreshAll()} disabled={refreshingAll || empty}>
            {refreshingAll ? 'Refreshing…' : 'Refresh all'}
          </button>
          {!empty && (
            <button type="button" class="primary" onClick={() => setCreating(true)}>New server</button>
          )}
        </div>
      </div>

      {!loaded && <p class="empty" aria-busy="true">Loading servers…</p>}

      {empty && (
        <div class="empty">
          <p class="empty-title">No editor servers yet</p>
          <p>Create one to get a code-server editor with its own workspace and extensions, or pick a ready-made one from the <a href="#/templates">templates</a>.</p>
          <button type="button" class="primary" onClick={() => setCreating(true)}>New server</button>
        </div>
      )}

      {loaded && !empty && (
        <>
          <p class="muted summary" aria-live="polite">
            {rows.length === servers.size
              ? `${servers.size} server${servers.size === 1 ? '' : 's'}, ${[...servers.values()].filter((s) => s.status === 'running').length} running`
              : `${rows.length} of ${servers.size} servers match`}
          </p>
          <CapacitySummary servers={[...servers.values()]} />
          {/* Scrolls sideways only in a narrow window, with the names and the actions kept in view. */}
          <div class="table-scroll servers-scroll" tabIndex={0} role="group" aria-label="Servers table">
            <table class="servers" aria-label="Servers">
              <thead>
                <tr>
                  {COLUMNS.map(({ key, label, numeric }) => {
                    const sorted = sort.column === key;
                    return (
                      <th
                        key={key}
                        scope="col"
                        class={`col-${key}${numeric ? ' num' : ''}`}
                        aria-sort={sorted ? (sort.direction === 1 ? 'ascending' : 'descending') : 'none'}
                      >
                        <button type="button" class="sort" onClick={() => sortBy(key)}>
                          {label}
                          <span aria-hidden="true" class="sort-mark">{sorted ? (sort.direction === 1 ? '▲' : '▼') : '↕'}</span>
                        </button>
                      </th>
                    );
                  })}
                  <th scope="col" class="col-actions">Actions</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((server) => <ServerRow key={server.id} server={server} name={nameOf(server, servers)} now={now} />)}
              </tbody>
            </table>
          </div>
          {rows.length === 0 && (
            <div class="empty">
              <p class="empty-title">No servers match “{filter}”</p>
              <button type="button" onClick={() => setFilter('')}>Clear the filter</button>
            </div>
          )}
        </>
      )}

      <CreateServerDialog open={creating} onClose={() => setCreating(false)} />
    </>
  );
}

function ServerRow({ server, name, now }: { server: ServerRecord; name: ServerName; now: number }) {
  const uptime = uptimeSeconds(server, now);
  // An editor runs: a process (with a pid) or a Pod (without one).
  const live = server.start_time !== null;
  return (
    <tr>
      <td class="col-name">
        <a href={`#/servers/${encodeURIComponent(server.id)}`} class="server-name"><ServerNameText name={name} /></a>
        {server.manifest_errors?.length ? <span class="warn-mark" title="Its manifest has errors"> ⚠ manifest errors</span> : null}
      </td>
      <td class="col-status"><ServerStatus server={server} /></td>
      <td class="num">{server.port ?? '—'}</td>
      <td class="num">{server.pid ?? '—'}</td>
      <td class="num">{uptime === null ? '—' : formatDuration(uptime)}</td>
      <td class="num">{live ? formatPercent(server.cpu_percent) : '—'}</td>
      <td class="num">{live ? formatMb(server.memory_mb) : '—'}</td>
      <td class="num" title={server.extensions.join('\n') || undefined}>
        {extensionsSummary(server)}
      </td>
      <td class="col-owner">{server.owner ?? <span class="muted">—</span>}</td>
      <td class="col-actions"><RowActions server={server} label={name.label} /></td>
    </tr>
  );
}

/** "3", or "2 of 3 installed" while some are not installed yet, with failures counted. */
function extensionsSummary(server: ServerRecord): string {
  // The server's own extensions and its groups' (which only its status lists).
  const ids = new Set([...server.extensions, ...server.extension_status.map((e) => e.id)]);
  const total = ids.size;
  const installed = server.extension_status.filter((e) => /^installed$/i.test(String(e.state ?? ''))).length;
  const failed = server.extension_status.filter((e) => /fail/i.test(String(e.state ?? ''))).length;
  if (total === 0 || installed === total) return String(total);
  return `${installed} of ${total}${failed ? `, ${failed} failed` : ''}`;
}
