// A small time chart in SVG: one series as a line over its min–max band, or as bars (counts),
// with a y axis from 0 (ticks with the unit), a time axis, and a readout of the point under the
// pointer (or chosen with the arrow keys; the latest otherwise). It takes the width of its box and
// draws at that many pixels, so text is never stretched. Only renders: the data comes in props.
import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import './chart.css';

export interface ChartPoint {
  /** Start of the bucket, ms since the epoch. */
  t: number;
  /** The value drawn (the bucket's average, or its count). */
  v: number;
  /** The bucket's least and most, drawn as a band behind the line. */
  lo?: number;
  hi?: number;
}

export interface ChartProps {
  /** The chart's name ("CPU"), which its figure and image are named by. */
  label: string;
  /** The unit beside the y axis ("%", "MB"). */
  unit: string;
  /** Which palette colour (chart.css): cpu, memory, running, idle. */
  tone: 'cpu' | 'memory' | 'running' | 'idle';
  points: ChartPoint[];
  /** The window shown, ms since the epoch. */
  from: number;
  to: number;
  bucketMs: number;
  kind?: 'line' | 'bars';
  /** A value as the readout says it ("23 %", "1.2 GB"). */
  format: (value: number) => string;
  /** Whole numbers only on the y axis (counts). */
  integer?: boolean;
}

const HEIGHT = 180;
const MARGIN = { left: 44, right: 12, top: 20, bottom: 24 };
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);

/** The smallest round number (1, 2, 2.5, 5 × 10^k) at or above `max`; at least 1. */
export function niceMax(max: number, integer = false): number {
  if (!(max > 0)) return 1;
  // Counts up to 4 get a tick at every whole number.
  if (integer && max <= 4) return Math.ceil(max);
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) {
    const candidate = step * magnitude;
    if (candidate >= max && (!integer || Number.isInteger(candidate / 2))) return candidate;
  }
  return 10 * magnitude;
}

/** A tick label of the y axis: "2.5", "40", "1,200". */
function tickText(value: number): string {
  return value >= 1000 ? Math.round(value).toLocaleString('en-US') : String(Math.round(value * 100) / 100);
}

function timeText(ms: number, seconds: boolean): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}${seconds ? `:${two(d.getSeconds())}` : ''}`;
}

/** The width of the element, followed as it changes. */
function useWidth(fallback: number): [RefObject<HTMLDivElement | null>, number] {
  const [width, setWidth] = useState(fallback);
  const ref = useRef<HTMLDivElement | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(160, Math.floor(el.clientWidth)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}

export function Chart(props: ChartProps) {
  const { points, from, to, bucketMs, format, unit, label } = props;
  const [ref, width] = useWidth(480);
  // What the readout shows: the point nearest the pointer (kept as its place in the chart, so a
  // refresh that moves the window shows the point now under it), or the one chosen with the keys.
  const [pointer, setPointer] = useState<number>();
  const [keyed, setKeyed] = useState<number>();
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const span = Math.max(to - from, 1);
  const max = niceMax(Math.max(0, ...points.map((p) => p.hi ?? p.v)), props.integer);
  const x = (t: number) => MARGIN.left + ((t - from) / span) * plotW;
  const y = (v: number) => MARGIN.top + plotH - (Math.min(v, max) / max) * plotH;
  // A bucket is drawn at its middle; the bucket still filling, at most at the window's end (now).
  const mid = (p: ChartPoint) => Math.min(p.t + bucketMs / 2, to);

  // Runs of points one bucket apart: a gap (no sample: the editor stopped) breaks the line.
  const runs: ChartPoint[][] = [];
  for (const point of points) {
    const run = runs.at(-1);
    if (run && point.t - run.at(-1)!.t <= bucketMs * 1.5) run.push(point);
    else runs.push([point]);
  }
  const yTicks = props.integer && max <= 4 ? Array.from({ length: max + 1 }, (_, i) => i) : [0, max / 2, max];
  // As many time labels as fit without touching (about 90 px each), at most 6.
  const maxTicks = Math.min(6, Math.max(2, Math.floor(plotW / 90)));
  const step = TIME_STEPS.find((s) => span / s <= maxTicks) ?? TIME_STEPS.at(-1)!;
  const xTicks: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) xTicks.push(t);
  const nearest = (px: number) => {
    if (points.length === 0) return undefined;
    const at = from + ((px - MARGIN.left) / plotW) * span;
    let best = 0;
    points.forEach((p, i) => {
      if (Math.abs(mid(p) - at) < Math.abs(mid(points[best]) - at)) best = i;
    });
    return best;
  };
  const keyedIndex = keyed === undefined ? -1 : points.findIndex((p) => p.t === keyed);
  const hover = keyedIndex >= 0 ? keyedIndex : pointer !== undefined ? nearest(pointer) : undefined;
  const shown = hover !== undefined ? points[hover] : points.at(-1);
  const peak = points.reduce((m, p) => Math.max(m, p.hi ?? p.v), 0);
  const summary = points.length === 0 ? 'no samples in this window'
    : props.kind === 'bars' ? `${format(points.reduce((s, p) => s + p.v, 0))} in this window`
      : `latest ${format(points.at(-1)!.v)}, peak ${format(peak)}`;

  const onKey = (event: KeyboardEvent) => {
    if (points.length === 0 || (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight')) return;
    event.preventDefault();
    const at = hover ?? points.length - 1;
    setKeyed(points[Math.min(points.length - 1, Math.max(0, at + (event.key === 'ArrowLeft' ? -1 : 1)))].t);
  };
  const leave = () => {
    setPointer(undefined);
    setKeyed(undefined);
  };
  const bandPath = (run: ChartPoint[]) => `M${run.map((p) => `${x(mid(p))},${y(p.hi ?? p.v)}`).join('L')}`
    + `L${[...run].reverse().map((p) => `${x(mid(p))},${y(p.lo ?? p.v)}`).join('L')}Z`;
  const barWidth = Math.max(2, (bucketMs / span) * plotW * 0.8);

  return (
    <figure class={`chart chart-${props.tone}`} aria-label={label}>
      <figcaption>
        <span class="chart-title">{label}</span>
        <span class="chart-readout" aria-live="off">
          {shown ? <><time dateTime={new Date(shown.t).toISOString()}>{timeText(shown.t, bucketMs < 60_000)}</time> {format(shown.v)}
            {shown.lo !== undefined && shown.hi !== undefined && shown.hi !== shown.lo && <span class="muted"> ({format(shown.lo)}–{format(shown.hi)})</span>}</> : <span class="muted">no samples</span>}
        </span>
      </figcaption>
      <div ref={ref} class="chart-box">
        <svg
          role="img" aria-label={`${label}: ${summary}`} width={width} height={HEIGHT} tabIndex={0}
          data-from={from} data-to={to} data-max={max}
          onMouseMove={(e) => {
            setKeyed(undefined);
            setPointer(e.clientX - (e.currentTarget as SVGSVGElement).getBoundingClientRect().left);
          }}
          onMouseLeave={leave} onKeyDown={onKey} onBlur={leave}
        >
          <rect data-plot x={MARGIN.left} y={MARGIN.top} width={plotW} height={plotH} fill="none" stroke="none" />
          <g class="chart-grid" aria-hidden="true">
            {yTicks.map((v) => <line key={v} x1={MARGIN.left} x2={MARGIN.left + plotW} y1={y(v)} y2={y(v)} />)}
          </g>
          <g class="chart-axis" aria-hidden="true">
            <line x1={MARGIN.left} x2={MARGIN.left} y1={MARGIN.top} y2={MARGIN.top + plotH} />
            <line x1={MARGIN.left} x2={MARGIN.left + plotW} y1={MARGIN.top + plotH} y2={MARGIN.top + plotH} />
            {yTicks.map((v) => <text key={v} x={MARGIN.left - 6} y={y(v)} text-anchor="end" dominant-baseline="middle">{tickText(v)}</text>)}
            <text x={4} y={2} dominant-baseline="hanging" class="chart-unit">{unit}</text>
            {xTicks.map((t) => (
              <text key={t} x={x(t)} y={HEIGHT - 6} text-anchor={x(t) < MARGIN.left + 24 ? 'start' : x(t) > MARGIN.left + plotW - 24 ? 'end' : 'middle'}>
                {timeText(t, step < 60_000)}
              </text>
            ))}
          </g>
          <g class="chart-data" aria-hidden="true">
            {props.kind === 'bars'
              ? points.filter((p) => p.v > 0).map((p) => (
                <rect key={p.t} class="chart-bar" x={x(mid(p)) - barWidth / 2} width={barWidth} y={y(p.v)} height={MARGIN.top + plotH - y(p.v)} />
              ))
              : runs.map((run) => (
                <g key={run[0].t}>
                  {run.some((p) => p.lo !== undefined) && <path class="chart-band" d={bandPath(run)} />}
                  {run.length === 1
                    ? <circle class="chart-dot" cx={x(mid(run[0]))} cy={y(run[0].v)} r={2.5} />
                    : <path class="chart-line" d={`M${run.map((p) => `${x(mid(p))},${y(p.v)}`).join('L')}`} />}
                </g>
              ))}
            {hover !== undefined && points[hover] && (
              <g class="chart-hover">
                <line x1={x(mid(points[hover]))} x2={x(mid(points[hover]))} y1={MARGIN.top} y2={MARGIN.top + plotH} />
                <circle cx={x(mid(points[hover]))} cy={y(points[hover].v)} r={3.5} />
              </g>
            )}
          </g>
        </svg>
      </div>
    </figure>
  );
}
