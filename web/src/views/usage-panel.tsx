// Usage over time: a server's CPU and memory (on its page), and the fleet's running editors, their
// memory and idle stops (on the health page), from the history the service keeps
// (GET /servers/{id}/usage, GET /usage). Asked again about once a bucket while the page is visible.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ServerRecord } from '../api/types.ts';
import { getFleetUsage, getServerUsage, type FleetUsage, type ServerUsage } from '../api/usage.ts';
import { Chart, type ChartPoint } from '../components/chart.tsx';
import { formatDuration, formatMb, formatPercent } from '../components/format.ts';

/** Windows offered, when shorter than the history kept (which is always offered too). */
const WINDOWS = [{ text: '15m', seconds: 900 }, { text: '1h', seconds: 3600 }, { text: '6h', seconds: 21600 }, { text: '24h', seconds: 86400 }];

type Window = { window_seconds: number; bucket_seconds: number; from: string; to: string };

/**
 * Loads with `load(window)` now, when `key` or the window changes, and again every bucket (between
 * 2 and 30 s) while the page is visible; the last answer is kept through a failed refresh.
 */
function usePolledUsage<T extends Window>(load: (window?: string) => Promise<T>, key: string) {
  const [window, setWindow] = useState<string>();
  const [state, setState] = useState<{ value?: T; error?: string }>({});
  // The whole history kept: the window of an answer to no window asked.
  const [kept, setKept] = useState<number>();
  const bucketMs = (state.value?.bucket_seconds ?? 10) * 1000;
  useEffect(() => {
    let current = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = () => {
      if (document.visibilityState !== 'visible') return;
      load(window).then(
        (value) => {
          if (!current) return;
          setState({ value });
          if (window === undefined) setKept(value.window_seconds);
        },
        (error: Error) => current && setState((s) => ({ value: s.value, error: error.message })),
      ).finally(() => {
        if (current) timer = setTimeout(run, Math.min(30_000, Math.max(2000, bucketMs)));
      });
    };
    // Hidden, it stops asking; shown again, it asks at once.
    const onVisible = () => {
      if (document.visibilityState !== 'visible') return;
      clearTimeout(timer);
      run();
    };
    run();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      current = false;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [key, window, bucketMs]);
  return { ...state, window, setWindow, kept };
}

function WindowPicker({ value, kept, onChange, label }: { value?: string; kept?: number; onChange: (w?: string) => void; label: string }) {
  if (kept === undefined) return null;
  const shorter = WINDOWS.filter((w) => w.seconds < kept);
  return (
    <label class="muted">
      Window{' '}
      <select aria-label={`${label} window`} value={value ?? ''} onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value || undefined)}>
        {shorter.map((w) => <option key={w.text} value={w.text}>last {windowText(w.seconds)}</option>)}
        <option value="">last {windowText(kept)} (all kept)</option>
      </select>
    </label>
  );
}

function UsageCard({ id, title, picker, children }: { id: string; title: string; picker: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="card" aria-labelledby={id}>
      <div class="usage-head">
        <h2 id={id}>{title}</h2>
        {picker}
      </div>
      {children}
    </section>
  );
}

/** "15 min", "6 h", "1 h 30 min": a window as the picker names it. */
function windowText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return seconds > 3600 ? formatDuration(seconds) : `${seconds / 60} min`;
  return formatDuration(seconds);
}

const bounds = (w: Window) => ({ from: Date.parse(w.from), to: Date.parse(w.to), bucketMs: w.bucket_seconds * 1000 });

/** A server's CPU and memory over the window; refetched when it starts or stops. */
export function UsagePanel({ server }: { server: ServerRecord }) {
  const usage = usePolledUsage<ServerUsage>((window) => getServerUsage(server.id, window), `${server.id}:${server.status}`);
  const data = usage.value;
  const points = (pick: (p: ServerUsage['points'][number]) => { min: number; avg: number; max: number }): ChartPoint[] =>
    (data?.points ?? []).map((p) => ({ t: Date.parse(p.time), v: pick(p).avg, lo: pick(p).min, hi: pick(p).max }));
  return (
    <UsageCard
      id="section-usage" title="Usage"
      picker={<WindowPicker label="Usage" value={usage.window} kept={usage.kept} onChange={usage.setWindow} />}
    >
      {usage.error && <p role="alert" class="inline-error">Could not load the usage: {usage.error}</p>}
      {!data && !usage.error && <p class="muted" aria-busy="true">Loading…</p>}
      {data && (
        <>
          {data.points.length === 0 && (
            <p class="muted">No samples in the last {windowText(data.window_seconds)}: the editor has not run in that time (the service keeps what it sampled since it started).</p>
          )}
          <div class="usage-charts">
            <Chart label="CPU" unit="%" tone="cpu" points={points((p) => p.cpu_percent)} {...bounds(data)} format={formatPercent} />
            <Chart label="Memory" unit="MB" tone="memory" points={points((p) => p.memory_mb)} {...bounds(data)} format={formatMb} />
          </div>
        </>
      )}
    </UsageCard>
  );
}

/** The fleet's running editors, their memory together, and idle stops over the window. */
export function FleetUsagePanel() {
  const usage = usePolledUsage<FleetUsage>((window) => getFleetUsage(window), 'fleet');
  const data = usage.value;
  const sampled = (data?.points ?? []).filter((p) => p.running && p.memory_mb);
  const spread = (pick: (p: FleetUsage['points'][number]) => { min: number; avg: number; max: number } | null): ChartPoint[] =>
    sampled.map((p) => ({ t: Date.parse(p.time), v: pick(p)!.avg, lo: pick(p)!.min, hi: pick(p)!.max }));
  const stops: ChartPoint[] = (data?.points ?? []).filter((p) => p.idle_stops > 0).map((p) => ({ t: Date.parse(p.time), v: p.idle_stops }));
  const editors = (n: number) => `${Math.round(n * 10) / 10} ${n === 1 ? 'editor' : 'editors'}`;
  return (
    <UsageCard
      id="health-usage" title="Fleet usage"
      picker={<WindowPicker label="Fleet usage" value={usage.window} kept={usage.kept} onChange={usage.setWindow} />}
    >
      {usage.error && <p role="alert" class="inline-error">Could not load the fleet's usage: {usage.error}</p>}
      {!data && !usage.error && <p class="muted" aria-busy="true">Loading…</p>}
      {data && (
        <div class="usage-charts">
          <Chart label="Running editors" unit="editors" tone="running" points={spread((p) => p.running)} {...bounds(data)} format={editors} integer />
          <Chart label="Editor memory" unit="MB" tone="memory" points={spread((p) => p.memory_mb)} {...bounds(data)} format={formatMb} />
          <Chart label="Idle stops" unit="stops" tone="idle" kind="bars" points={stops} {...bounds(data)} format={(n) => `${n} ${n === 1 ? 'stop' : 'stops'}`} integer />
        </div>
      )}
    </UsageCard>
  );
}
