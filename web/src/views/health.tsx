// The service's health (#/health): GET /health's figures, then each of its sections (config,
// templates, git sync, the assistant's token…) with their problems.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getConfig, type ServiceConfig } from '../api/config.ts';
import { getHealth, type ServiceHealth } from '../api/servers.ts';
import type { CapacityFigures } from '../components/capacity.tsx';
import { formatDuration, formatMb } from '../components/format.ts';
import { PersonUse } from '../components/person-use.tsx';
import { RelativeTime } from '../components/time.tsx';
import { useServers } from '../store.ts';
import { FleetUsagePanel } from './usage-panel.tsx';

const FIXED = new Set(['status', 'version', 'uptime_seconds', 'servers', 'editor', 'memory_mb', 'problems', 'capacity']);
const SECTION_NAMES: Record<string, string> = {
  config: 'Config file',
  templates: 'Templates',
  git_sync: 'Git sync',
  assistant: 'Assistant token',
  assistant_router: 'Assistant router',
  watch: 'Watch streams',
};
/** GET /health is cheap; it is asked again this often while the view is open. */
const REFRESH_MS = 10_000;

export function HealthView() {
  const [health, setHealth] = useState<ServiceHealth>();
  const [config, setConfig] = useState<ServiceConfig>();
  const [error, setError] = useState<string>();
  const [checkedAt, setCheckedAt] = useState<string>();
  const [loading, setLoading] = useState(false);
  const { servers } = useServers();

  const load = async () => {
    setLoading(true);
    try {
      const [h, c] = await Promise.all([getHealth(), getConfig().catch(() => undefined)]);
      setHealth(h);
      if (c) setConfig(c.data);
      setError(undefined);
      setCheckedAt(new Date().toISOString());
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  const range = config?.server.port_range;
  const capacity = range ? range.max - range.min + 1 : undefined;
  const sections = health ? Object.entries(health).filter(([key]) => !FIXED.has(key)) : [];

  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Service health</h1>
        <div class="toolbar">
          {checkedAt && <span class="muted">Checked <RelativeTime value={checkedAt} /></span>}
          <button type="button" onClick={() => void load()} disabled={loading}>{loading ? 'Checking…' : 'Check now'}</button>
        </div>
      </div>
      {error && <p role="alert" class="inline-error">Could not read the service's health: {error}</p>}
      {!health && !error && <p class="empty" aria-busy="true">Loading…</p>}
      {health && (
        <>
          <section class="card" aria-labelledby="health-service">
            <h2 id="health-service">Service</h2>
            <dl class="facts">
              <Fact term="Status">
                <span class={`badge badge-${health.status === 'healthy' ? 'running' : 'failed'}`}>
                  <span aria-hidden="true" class="badge-mark">{health.status === 'healthy' ? '●' : '⚠'}</span>
                  {health.status}
                </span>
              </Fact>
              <Fact term="Version">{health.version ?? '—'}</Fact>
              <Fact term="Uptime">{formatDuration(health.uptime_seconds)}</Fact>
              <Fact term="Memory">
                {formatMb(health.memory_mb.rss)} <span class="muted">resident, heap {formatMb(health.memory_mb.heap_used)} of {formatMb(health.memory_mb.heap_total)}</span>
              </Fact>
              <Fact term="Servers">
                {health.servers} <span class="muted">({[...servers.values()].filter((s) => s.status === 'running').length} running)</span>
              </Fact>
              <Fact term="Ports">
                {capacity !== undefined && range
                  ? <>{health.servers} of {capacity} ports used <span class="muted">({range.min}–{range.max})</span></>
                  : '—'}
              </Fact>
              <Fact term="Editor binary" wide><code class="wrap">{health.editor}</code></Fact>
            </dl>
          </section>

          {health.capacity ? <CapacityCard figures={health.capacity as CapacityFigures} /> : null}

          <FleetUsagePanel />

          <section class="card" aria-labelledby="health-problems">
            <h2 id="health-problems">Problems</h2>
            {health.problems?.length ? (
              <ul class="problems">{health.problems.map((p, i) => <li key={i}>{p}</li>)}</ul>
            ) : (
              <p class="ok"><span aria-hidden="true">✓ </span>No problems: the config file, templates and other sections are all fine.</p>
            )}
          </section>

          {sections.map(([key, value]) => (
            <section class="card" key={key} aria-labelledby={`health-${key}`}>
              <h2 id={`health-${key}`}>{SECTION_NAMES[key] ?? label(key)}</h2>
              <Value value={value} />
            </section>
          ))}
        </>
      )}
    </>
  );
}

/** Used and free capacity: editors running against capacity.maxRunning, their memory against capacity.maxMemoryMb. */
function CapacityCard({ figures }: { figures: CapacityFigures }) {
  return (
    <section class="card" aria-labelledby="health-capacity">
      <h2 id="health-capacity">Capacity</h2>
      <dl class="facts">
        <Fact term="Editors running">
          {figures.max_running === null ? <>{figures.running} <span class="muted">(no limit)</span></> : <>{figures.running} of {figures.max_running}</>}
          {figures.starting > 0 && <span class="muted"> ({figures.starting} starting)</span>}
        </Fact>
        <Fact term="Memory used">{formatMb(figures.memory_used_mb)}</Fact>
        <Fact term="Memory free">
          {figures.memory_free_mb === null ? <span class="muted">no limit</span> : <>{formatMb(figures.memory_free_mb)} <span class="muted">of {formatMb(figures.memory_limit_mb)}</span></>}
        </Fact>
        <Fact term="When full">
          {figures.when_full === 'stopIdlest'
            ? `stop the least recently active editor idle for ${formatDuration(figures.idle_after_seconds)}`
            : 'refuse the start'}
        </Fact>
        <Fact term="Waiting for room">{figures.waiting.length ? figures.waiting.join(', ') : <span class="muted">none</span>}</Fact>
        <Fact term="Memory limit" wide><span class="wrap">{figures.memory_limit_source}</span></Fact>
      </dl>
      {figures.per_person && <PersonUse figures={figures.per_person} />}
    </section>
  );
}

function Fact({ term, children, wide }: { term: string; children: ComponentChildren; wide?: boolean }) {
  return (
    <div class={wide ? 'wide' : undefined}>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** snake_case to words: "last_sync_at" → "Last sync at". */
function label(key: string): string {
  const words = key.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

/** Any JSON value of a section, readably: objects as definition lists, arrays as lists, times relative. */
function Value({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  if (typeof value === 'boolean') return <span>{value ? 'yes' : 'no'}</span>;
  if (typeof value === 'number') return <span>{value}</span>;
  if (typeof value === 'string') return ISO_TIME.test(value) ? <RelativeTime value={value} /> : <span class="wrap">{value}</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">none</span>;
    return <ul class="plain">{value.map((item, i) => <li key={i}><Value value={typeof item === 'object' && item && 'problem' in item ? problemText(item) : item} /></li>)}</ul>;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <dl class="facts">
      {entries.map(([k, v]) => (
        <div key={k} class={typeof v === 'object' && v !== null ? 'wide' : undefined}>
          <dt>{label(k)}</dt>
          <dd><Value value={v} /></dd>
        </div>
      ))}
    </dl>
  );
}

function problemText(item: { file?: string; line?: number | null; column?: number | null; problem?: string }): string {
  const where = [item.file, item.line, item.column].filter((x) => x !== null && x !== undefined).join(':');
  return where ? `${where}: ${item.problem}` : String(item.problem);
}
