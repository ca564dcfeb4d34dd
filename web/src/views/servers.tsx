// The server table (#/): every server from the watch stream, sorted and filtered, with its actions.
// Only the rows in and near the window are in the DOM (useWindowedRows), so it stays quick at
// 10,000 servers.
import { useMemo, useRef, useState } from 'preact/hooks';
import type { ServerRecord } from '../api/types.ts';
import { runRefreshAll, usePending } from '../actions.ts';
import { formatDuration, formatMb, formatPercent } from '../components/format.ts';
import { nameOf, ServerNameText, type ServerName } from '../components/names.tsx';
import { SharedMark } from '../components/shared-mark.tsx';
import { RowActions } from '../components/server-actions.tsx';
import { ServerStatus } from '../components/status.tsx';
import { useNow, useServers } from '../store.ts';
import { CreateServerDialog } from './create-dialog.tsx';
import { CapacitySummary } from '../components/capacity.tsx';
import { useWindowedRows } from '../components/windowed-rows.ts';
import { filterServers, sortServers, type Column, type Direction } from './server-rows.ts';

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

const count = (n: number) => n.toLocaleString('en-US');

// Kept while the person moves between views.
let remembered = { column: 'name' as Column, direction: 1 as Direction, filter: '' };

export function ServersView() {
  const { servers, loaded, received } = useServers();
  const { refreshingAll } = usePending();
  const now = useNow();
  const [sort, setSort] = useState({ column: remembered.column, direction: remembered.direction });
  const [filter, setFilter] = useState(remembered.filter);
  const [creating, setCreating] = useState(false);
  remembered = { ...sort, filter };

  // Sorted when the servers or the order change; filtered from that on each keystroke.
  const ordered = useMemo(() => sortServers(servers.values(), sort.column, sort.direction), [servers, sort]);
  const rows = useMemo(() => filterServers(ordered, filter), [ordered, filter]);
  const all = useMemo(() => [...servers.values()], [servers]);
  const running = useMemo(() => all.filter((s) => s.status === 'running').length, [all]);
  const body = useRef<HTMLTableSectionElement>(null);
  const shown = useWindowedRows(rows.length, body);
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

      {!loaded && <p class="empty" aria-busy="true">Loading servers…{received > 0 && ` ${count(received)} so far`}</p>}

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
              ? `${count(servers.size)} server${servers.size === 1 ? '' : 's'}, ${count(running)} running`
              : `${count(rows.length)} of ${count(servers.size)} servers match`}
          </p>
          <CapacitySummary servers={all} />
          {/* Scrolls sideways only in a narrow window, with the names and the actions kept in view. */}
          <div class="table-scroll servers-scroll" tabIndex={0} role="group" aria-label="Servers table">
            {/* Row counts for assistive technology, which sees only the rendered rows. */}
            <table class="servers" aria-label="Servers" aria-rowcount={rows.length + 1}>
              <thead>
                <tr aria-rowindex={1}>
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
              <tbody ref={body}>
                {shown.before > 0 && <Spacer height={shown.before} />}
                {rows.slice(shown.start, shown.end).map((server, i) => (
                  <ServerRow key={server.id} server={server} name={nameOf(server, servers)} now={now} index={shown.start + i} />
                ))}
                {shown.after > 0 && <Spacer height={shown.after} />}
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

/** Stands for the rows not rendered, so the table keeps its height and the scroll bar its meaning. */
function Spacer({ height }: { height: number }) {
  return (
    <tr class="spacer" aria-hidden="true">
      <td colSpan={COLUMNS.length + 1} style={{ height: `${height}px` }} />
    </tr>
  );
}

function ServerRow({ server, name, now, index }: { server: ServerRecord; name: ServerName; now: number; index: number }) {
  const uptime = uptimeSeconds(server, now);
  // An editor runs: a process (with a pid) or a Pod (without one).
  const live = server.start_time !== null;
  return (
    <tr data-row aria-rowindex={index + 2}>
      <td class="col-name">
        <a href={`#/servers/${encodeURIComponent(server.id)}`} class="server-name"><ServerNameText name={name} /></a>
        <SharedMark server={server} />
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
