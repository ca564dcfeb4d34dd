// Live logs of one server or all: the stream's replay of recent lines, then each new one; level
// filter, search with highlights, pause (new lines held, bounded), download of the lines held.
// The list follows the newest line unless the reader scrolled up.
import { memo } from 'preact/compat';
import { useEffect, useId, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { formatLogLine, openLogStream, type LogLine, type StreamState } from '../api/logs.ts';
import { formatExact } from '../components/format.ts';
import { serverNames } from '../components/names.tsx';
import { useServers } from '../store.ts';
import { sortServers } from './server-rows.ts';
import './logs.css';

/** Lines kept on the page, and lines held while paused: the oldest go first. */
const MAX_LINES = 5000;
const TAIL = 500;
const LEVELS = ['error', 'warn', 'info', 'debug'] as const;

interface Entry extends LogLine {
  seq: number;
}

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', fractionalSecondDigits: 3, hour12: false });

export function LogsView(props: { serverId?: string }) {
  const serverId = props.serverId || undefined;
  const id = useId();
  const { servers, loaded } = useServers();
  const [level, setLevel] = useState('');
  const [search, setSearch] = useState('');
  const [paused, setPaused] = useState(false);
  const [stream, setStream] = useState<StreamState>({ state: 'connecting' });
  const [, setVersion] = useState(0);
  const lines = useRef<Entry[]>([]);
  const held = useRef<Entry[]>([]);
  const heldDropped = useRef(0);
  const pausedRef = useRef(false);
  const seq = useRef(0);
  const box = useRef<HTMLDivElement>(null);
  const [following, setFollowing] = useState(true);
  const followingRef = useRef(true);

  useEffect(() => {
    lines.current = [];
    held.current = [];
    heldDropped.current = 0;
    setVersion((v) => v + 1);
    return openLogStream({
      serverId,
      tail: TAIL,
      onState: setStream,
      onLines: (batch) => {
        const entries = batch.map((line) => ({ ...line, seq: seq.current++ }));
        if (pausedRef.current) {
          held.current = bounded(held.current, entries, (n) => { heldDropped.current += n; });
        } else {
          lines.current = bounded(lines.current, entries);
        }
        setVersion((v) => v + 1);
      },
    });
  }, [serverId]);

  function togglePause() {
    const next = !pausedRef.current;
    pausedRef.current = next;
    if (!next) {
      lines.current = bounded(lines.current, held.current);
      held.current = [];
      heldDropped.current = 0;
    }
    setPaused(next);
  }

  // Each line names its server as the table does: equal display names with their manifest names.
  const names = serverNames(servers);
  const serverOf = (line: LogLine) => names.get(line.server_id)?.label ?? line.server_name;
  const query = search.trim().toLowerCase();
  const shown = useMemo(() => lines.current.filter((line) =>
    (!level || line.level.toLowerCase() === level) && (!query || line.message.toLowerCase().includes(query) || serverOf(line).toLowerCase().includes(query)),
  ), [lines.current, level, query, names]);

  // Follow the newest line unless the reader has scrolled up.
  useLayoutEffect(() => {
    const el = box.current;
    if (el && followingRef.current) el.scrollTop = el.scrollHeight;
  });
  function onScroll() {
    const el = box.current;
    if (!el) return;
    const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - 24;
    if (atBottom !== followingRef.current) {
      followingRef.current = atBottom;
      setFollowing(atBottom);
    }
  }
  function jumpToLatest() {
    followingRef.current = true;
    setFollowing(true);
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }

  // Sorted, and their options made, once per change of the servers, not for every line that comes.
  const list = useMemo(() => sortServers(servers.values(), 'name', 1), [servers]);
  const options = useMemo(() => list.map((s) => <option key={s.id} value={s.id}>{names.get(s.id)?.label ?? s.name}</option>), [list, names]);
  const current = serverId ? servers.get(serverId) : undefined;
  const currentLabel = current ? names.get(current.id)?.label ?? current.name : undefined;
  const unknown = serverId !== undefined && loaded && current === undefined;

  function download() {
    const text = lines.current.map((line) => formatLogLine({ ...line, server_name: serverOf(line) }, !serverId)).join('\n') + (lines.current.length ? '\n' : '');
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = serverId ? `${fileSafe(currentLabel ?? serverId)}-logs.txt` : 'all-servers-logs.txt';
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  return (
    <section class="logs-view">
      <h1 tabIndex={-1}>Logs</h1>
      <div class="logs-toolbar">
        <div class="lv-field">
          <label for={`${id}-server`}>Server</label>
          <select id={`${id}-server`} value={serverId ?? ''}
            onChange={(e) => { const v = e.currentTarget.value; location.hash = v ? `#/logs/${encodeURIComponent(v)}` : '#/logs'; }}>
            <option value="">All servers</option>
            {options}
            {serverId && !current && <option value={serverId}>{loaded ? `unknown server ${serverId}` : 'loading…'}</option>}
          </select>
        </div>
        <div class="lv-field">
          <label for={`${id}-level`}>Level</label>
          <select id={`${id}-level`} value={level} onChange={(e) => setLevel(e.currentTarget.value)}>
            <option value="">All levels</option>
            {LEVELS.map((l) => <option key={l} value={l}>{l}</option>)}
          </select>
        </div>
        <div class="lv-field grow">
          <label for={`${id}-search`}>Search</label>
          <input id={`${id}-search`} type="search" aria-label="Search logs" placeholder="Text in a line or a server's name"
            value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </div>
        <div class="lv-buttons">
          <button type="button" aria-pressed={paused} onClick={togglePause} class={paused ? 'pressed' : ''}>Pause</button>
          <button type="button" onClick={download} disabled={lines.current.length === 0}>Download</button>
        </div>
      </div>

      <p class="lv-status">
        <span class={`lv-dot ${stream.state}`} aria-hidden="true" />
        {stream.state === 'live' && (serverId ? `Live: ${currentLabel ?? serverId}` : 'Live: all servers')}
        {stream.state === 'connecting' && 'Connecting to the log stream…'}
        {stream.state === 'waiting' && `Disconnected (${stream.reason}); reconnecting in ${Math.round(stream.retryInMs / 1000)} s`}
        {' · '}
        {level || query ? `${shown.length} of ${lines.current.length} lines` : `${lines.current.length} ${lines.current.length === 1 ? 'line' : 'lines'}`}
        {lines.current.length >= MAX_LINES && ` (the last ${MAX_LINES} are kept)`}
        {paused && (
          <strong class="lv-held">
            {' · '}Paused: {held.current.length} new {held.current.length === 1 ? 'line' : 'lines'} held
            {heldDropped.current > 0 && `, ${heldDropped.current} older dropped`}
          </strong>
        )}
      </p>
      {unknown && <p class="lv-notice">No server has the id {serverId}: choose one under Server, or All servers.</p>}

      <div class="lv-frame">
        <div ref={box} role="log" aria-label="Log lines" tabIndex={0} class="lv-lines" onScroll={onScroll}>
          {shown.length === 0 && (
            <p class="lv-empty">
              {lines.current.length > 0 ? 'No line matches the level and search.'
                : list.length === 0 && loaded && !serverId ? 'No editor servers yet: create one on the Servers page, and its lines show here.'
                : 'No log lines yet: lines show here as the editor prints them and as the controller creates, starts and stops it.'}
            </p>
          )}
          {shown.map((line) => <LogRow key={line.seq} line={line} server={serverOf(line)} query={query} withServer={!serverId} />)}
        </div>
        {!following && shown.length > 0 && (
          <button type="button" class="lv-jump primary" onClick={jumpToLatest}>Jump to latest</button>
        )}
      </div>
    </section>
  );
}

const LogRow = memo(function LogRow({ line, server, query, withServer }: { line: Entry; server: string; query: string; withServer: boolean }) {
  const date = new Date(line.timestamp);
  const valid = !Number.isNaN(date.getTime());
  return (
    <div class={`lv-line lv-${line.level.toLowerCase()}`}>
      {valid ? <time dateTime={line.timestamp} title={formatExact(date)}>{clock.format(date)}</time> : <span class="lv-time">{line.timestamp}</span>}
      {' '}<span class="lv-level">{line.level}</span>
      {withServer && <>{' '}<span class="lv-server">{highlight(server, query)}</span></>}
      {' '}<span class="lv-source">{line.source}</span>
      {' '}<span class="lv-msg">{highlight(line.message, query)}</span>
    </div>
  );
});

function highlight(text: string, query: string) {
  if (!query) return text;
  const parts: (string | preact.JSX.Element)[] = [];
  const lower = text.toLowerCase();
  let at = 0;
  for (let i = lower.indexOf(query); i !== -1; i = lower.indexOf(query, at)) {
    if (i > at) parts.push(text.slice(at, i));
    parts.push(<mark key={i}>{text.slice(i, i + query.length)}</mark>);
    at = i + query.length;
  }
  parts.push(text.slice(at));
  return parts;
}

function bounded(list: Entry[], more: Entry[], onDrop?: (n: number) => void): Entry[] {
  const next = list.length + more.length > MAX_LINES ? [...list, ...more].slice(-MAX_LINES) : [...list, ...more];
  const dropped = list.length + more.length - next.length;
  if (dropped > 0) onDrop?.(dropped);
  return next;
}

function fileSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'server';
}
