// The usage charts in real Chromium at 1280×800, checked from screenshots: a server's CPU and
// memory on its page, and the fleet's running editors, memory and idle stops on the health page.
// Real editor processes (the stub editor made to spin and hold memory) are sampled every 0.25 s
// into one-second buckets kept for a minute. Each chart is shot as a PNG, decoded
// (test/helpers/png.ts), and the line's colour must be drawn across the chart's width at the
// heights the API's figures give on the chart's own axis; the axes and labels stay inside the
// chart, nothing overflows the window, and the pointer's readout names the point under it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, Locator, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, closeBrowser, launchBrowser, withCleanPage } from '../helpers/browser.ts';
import { ensureWebBuilt } from '../helpers/dashboard-page.ts';
import { colourDistance, decodePng, parseColour, pixelAt, type Pixels } from '../helpers/png.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

// Code run in the page by evaluate(): the project's tsconfig has no DOM types.
declare const window: any, document: any, getComputedStyle: any;

const BUSY_EDITOR = resolve(new URL('../fixtures/busy-editor.mjs', import.meta.url).pathname);
const UI_WAIT = 20_000;
const SHOTS = join(ARTIFACTS, 'usage-charts');
/** A pixel counts as the line's when no channel is further than this from its colour. */
const CLOSE = 40;
/** How far (px) the line may be drawn from where the figures put it (its 2 px width, antialiasing). */
const SLACK = 3;

let service: TestService;
let browser: Browser;
let busy: { id: string };
let sleepy: { id: string };

/** Starts a server whose editor spins `duty` of a core and holds `mb` MB; `idleTimeoutSeconds` written into its manifest first. */
async function start(name: string, duty: number, mb: number, idleTimeoutSeconds?: number): Promise<{ id: string }> {
  const created = await service.request('POST', '/servers', { name });
  expect(created.status).toBe(201);
  if (idleTimeoutSeconds !== undefined) {
    const manifest = (await service.request('GET', `/servers/${created.body.id}/manifest`)).body.data;
    writeFileSync(manifest.file, manifest.yaml.replace(/^spec:\n/m, `spec:\n  idleTimeoutSeconds: ${idleTimeoutSeconds}\n`));
    await eventually(async () => (await service.request('GET', `/servers/${created.body.id}`)).body.idle_timeout_seconds === idleTimeoutSeconds, UI_WAIT);
  }
  Object.assign(process.env, { BUSY_EDITOR_DUTY: String(duty), BUSY_EDITOR_MB: String(mb) });
  try {
    expect((await service.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
  } finally {
    delete process.env.BUSY_EDITOR_DUTY;
    delete process.env.BUSY_EDITOR_MB;
  }
  return { id: created.body.id };
}

const points = async (path: string) => (await service.request('GET', path)).body.data.points as any[];

beforeAll(async () => {
  ensureWebBuilt();
  service = await startTestService({
    editorBin: BUSY_EDITOR,
    config: { controller: { statsIntervalSeconds: 0.25, usageBucketSeconds: 1, usageHistoryMinutes: 1 } },
  });
  // One editor, then a second, then a third that is stopped for idleness: the fleet's line steps.
  busy = await start('Busy', 0.5, 64);
  await eventually(async () => (await points(`/servers/${busy.id}/usage`)).length >= 6, UI_WAIT);
  await start('Second', 0, 0);
  await eventually(async () => (await points(`/servers/${busy.id}/usage`)).length >= 12, UI_WAIT);
  sleepy = await start('Sleepy', 0, 0, 3);
  await eventually(async () => (await service.request('GET', `/servers/${sleepy.id}`)).body.reason === 'IdleTimeout', 30_000);
  // Most of the minute kept, so the lines reach across most of the charts.
  await eventually(async () => (await points(`/servers/${busy.id}/usage`)).length >= 40, 60_000);
  browser = await launchBrowser();
}, 150_000);

afterAll(async () => {
  try {
    await closeBrowser(browser);
  } finally {
    await service?.stop();
  }
});

interface Shot {
  image: Pixels;
  /** The plot area within the shot, px. */
  plot: { left: number; top: number; width: number; height: number };
  /** The window and the top of the y axis the chart was drawn with. */
  from: number;
  to: number;
  max: number;
  /** The tone's colour, as the page computes it. */
  colour: [number, number, number];
  /** The figures the chart was drawn from: the API's answer it last had. */
  data: any;
}

/**
 * Shoots the chart named `label` once it shows the latest answer `answers` holds (the page asks
 * again each second: a shot taken while a newer answer was drawn is taken again).
 */
async function shoot(page: Page, label: string, answers: any[], file: string): Promise<Shot> {
  const figure = page.getByRole('figure', { name: label, exact: true });
  const svg = figure.getByRole('img');
  await page.mouse.move(0, 0);
  return eventually(async () => {
    const data = answers.at(-1);
    if (!data || Number(await svg.getAttribute('data-to')) !== Date.parse(data.to)) return undefined;
    const png = await svg.screenshot({ animations: 'disabled' });
    const drawn = await svg.evaluate((el: any) => {
      const box = el.getBoundingClientRect();
      const plot = el.querySelector('rect[data-plot]').getBoundingClientRect();
      return {
        to: Number(el.dataset.to), from: Number(el.dataset.from), max: Number(el.dataset.max),
        plot: { left: plot.left - box.left, top: plot.top - box.top, width: plot.width, height: plot.height },
        colour: getComputedStyle(el.closest('figure')).getPropertyValue('--chart'),
      };
    });
    if (drawn.to !== Date.parse(data.to)) return undefined;
    writeFileSync(join(SHOTS, `${file}.png`), png);
    return { image: decodePng(png), plot: drawn.plot, from: drawn.from, to: drawn.to, max: drawn.max, colour: parseColour(drawn.colour), data };
  }, UI_WAIT, 100);
}

/** Rows of the columns at `x` (the pixel it falls in and its neighbours; within the plot, with a little room) whose pixel is the tone's colour. */
function colouredRows(shot: Shot, x: number): number[] {
  const rows = new Set<number>();
  for (const column of [Math.floor(x) - 1, Math.floor(x), Math.floor(x) + 1]) {
    if (column >= 0 && column < shot.image.width) columnRows(shot, column).forEach((row) => rows.add(row));
  }
  return [...rows].sort((a, b) => a - b);
}

function columnRows(shot: Shot, column: number): number[] {
  const rows: number[] = [];
  for (let y = Math.max(0, Math.floor(shot.plot.top) - SLACK); y <= Math.min(shot.image.height - 1, Math.ceil(shot.plot.top + shot.plot.height) + SLACK); y++) {
    if (colourDistance(pixelAt(shot.image, column, y), shot.colour) <= CLOSE) rows.push(y);
  }
  return rows;
}

/** Where a bucket's middle and a value are drawn, px within the shot. */
function place(shot: Shot, time: string, value: number): { x: number; y: number } {
  const bucketMs = shot.data.bucket_seconds * 1000;
  // At the bucket's middle; the bucket still filling, at most at the window's end.
  const x = shot.plot.left + ((Math.min(Date.parse(time) + bucketMs / 2, shot.to) - shot.from) / (shot.to - shot.from)) * shot.plot.width;
  const y = shot.plot.top + shot.plot.height - (value / shot.max) * shot.plot.height;
  return { x, y };
}

/**
 * The line is drawn at each point's height (the API's average on the chart's axis), and without
 * a break from the first point to the last, which span most of the plot.
 */
function expectLineMatches(shot: Shot, values: { time: string; value: number }[], what: string): void {
  expect(values.length, what).toBeGreaterThan(10);
  const misplaced: string[] = [];
  for (const { time, value } of values) {
    const at = place(shot, time, value);
    const rows = colouredRows(shot, at.x);
    if (!rows.some((row) => Math.abs(row - at.y) <= SLACK)) misplaced.push(`${time} ${value} expected near y=${at.y.toFixed(1)} at x=${at.x.toFixed(1)}, drawn at ${JSON.stringify(rows)}`);
  }
  expect(misplaced, `${what}: points whose line is not where their figures put it`).toEqual([]);
  const first = place(shot, values[0].time, 0).x;
  const last = place(shot, values.at(-1)!.time, 0).x;
  expect(last - first, `${what}: the line spans most of the chart`).toBeGreaterThan(shot.plot.width * 0.6);
  const bare: number[] = [];
  // Every column between (the line's rounded ends antialiased aside).
  for (let x = Math.ceil(first) + 1; x < Math.floor(last); x++) if (columnRows(shot, x).length === 0) bare.push(x);
  expect(bare, `${what}: columns without the line between its first and last point`).toEqual([]);
}

/** Every label of the chart inside it, the chart inside the window, and the page not wider than it. */
async function expectFramed(page: Page, figure: Locator, what: string): Promise<void> {
  const problems = await figure.evaluate((el: any) => {
    const svg = el.querySelector('svg').getBoundingClientRect();
    const found: string[] = [];
    for (const text of el.querySelectorAll('svg text')) {
      const r = text.getBoundingClientRect();
      if (r.left < svg.left - 0.5 || r.right > svg.right + 0.5 || r.top < svg.top - 0.5 || r.bottom > svg.bottom + 0.5) found.push(`label "${text.textContent}" outside the chart`);
    }
    const box = el.getBoundingClientRect();
    if (box.left < 0 || box.right > window.innerWidth) found.push(`the chart (${box.left}–${box.right}) is wider than the window`);
    return found;
  });
  expect(problems, what).toEqual([]);
  expect(await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth), `${what}: the page scrolls sideways`).toBeLessThanOrEqual(0);
}

/** Collects the JSON answers of requests whose path ends with `suffix`, in order. */
function answersTo(page: Page, suffix: string): any[] {
  const answers: any[] = [];
  page.on('response', (response: Response) => {
    if (!new URL(response.url()).pathname.endsWith(suffix) || response.status() !== 200) return;
    void response.json().then((body) => answers.push(body.data), () => undefined);
  });
  return answers;
}

describe('the usage charts in Chromium at 1280×800', () => {
  beforeAll(() => mkdirSync(SHOTS, { recursive: true }));

  it('draw a server\'s CPU and memory at the heights of its figures, across the chart, with a readout under the pointer', async () => {
    await withCleanPage(browser, service.url, 'usage-server', UI_WAIT, async ({ page }) => {
      const answers = answersTo(page, `/servers/${busy.id}/usage`);
      await page.goto(`${service.url}/#/servers/${busy.id}`);
      await page.getByRole('heading', { level: 2, name: 'Usage' }).waitFor();
      for (const [label, key] of [['CPU', 'cpu_percent'], ['Memory', 'memory_mb']] as const) {
        const shot = await shoot(page, label, answers, `server-${key}`);
        const values = shot.data.points.map((p: any) => ({ time: p.time, value: p[key].avg }));
        expectLineMatches(shot, values, label);
        // The axis says what the scale is: its top label reads the chart's maximum.
        const top = await page.getByRole('figure', { name: label, exact: true }).evaluate((el: any) => [...el.querySelectorAll('svg text')]
          .map((t: any) => ({ text: t.textContent, y: t.getBoundingClientRect().top + t.getBoundingClientRect().height / 2 - el.querySelector('svg').getBoundingClientRect().top })));
        const topLabel = top.find((t: { y: number }) => Math.abs(t.y - shot.plot.top) <= 2);
        expect(Number(topLabel?.text.replace(/,/g, '')), `${label}: the top of the y axis is labelled with its maximum`).toBe(shot.max);
        await expectFramed(page, page.getByRole('figure', { name: label, exact: true }), label);
      }
      // The page asks again while it is open (every bucket, at least every 2 s): each shot above waited for the latest.
      await eventually(async () => answers.length >= 3, UI_WAIT);
      // Memory: the busy editor holds 64 MB more than a bare one, so its line is well above the axis.
      expect(answers.at(-1).points.at(-1).memory_mb.avg).toBeGreaterThan(64);

      // The pointer over the middle of the chart: the readout names the point nearest to it, its
      // time and its figure, as the answer drawn gives them.
      const figure = page.getByRole('figure', { name: 'CPU', exact: true });
      const svg = figure.getByRole('img');
      const box = (await svg.boundingBox())!;
      const pointerX = box.x + box.width / 2;
      await page.mouse.move(pointerX, box.y + 40);
      const readout = await eventually(async () => {
        const drawn = await svg.evaluate((el: any) => {
          const plot = el.querySelector('rect[data-plot]').getBoundingClientRect();
          const time = el.closest('figure').querySelector('figcaption time');
          return { from: Number(el.dataset.from), to: Number(el.dataset.to), left: plot.left, width: plot.width, time: time?.getAttribute('datetime'), text: el.closest('figure').querySelector('figcaption').textContent };
        });
        const data = answers.find((a) => Date.parse(a.to) === drawn.to);
        const point = data?.points.find((p: any) => new Date(p.time).toISOString() === drawn.time);
        return point ? { drawn, point } : undefined;
      }, UI_WAIT, 100);
      const { drawn, point } = readout;
      const pointX = drawn.left + ((Date.parse(point.time) + 500 - drawn.from) / (drawn.to - drawn.from)) * drawn.width;
      expect(Math.abs(pointX - pointerX), 'the readout is of the point under the pointer').toBeLessThanOrEqual(drawn.width / ((drawn.to - drawn.from) / 1000) + 1);
      const avg = point.cpu_percent.avg;
      const text = drawn.text.replace(/\s+/g, ' ');
      expect(text).toContain(new Date(point.time).toISOString().slice(11, 19));
      expect(text).toContain(avg < 10 ? `${avg.toFixed(1)} %` : `${Math.round(avg)} %`);
      await page.screenshot({ path: join(SHOTS, 'server-page-hover.png') });

      // By keyboard: the chart takes focus, and each left arrow steps the readout one point back.
      await page.mouse.move(0, 0);
      await svg.focus();
      for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowLeft');
      const stepped = await eventually(async () => {
        const { to, time, text } = await svg.evaluate((el: any) => ({
          to: Number(el.dataset.to),
          time: el.closest('figure').querySelector('figcaption time')?.getAttribute('datetime'),
          text: el.closest('figure').querySelector('figcaption').textContent,
        }));
        const data = answers.find((a) => Date.parse(a.to) === to);
        const at = data?.points.findIndex((p: any) => new Date(p.time).toISOString() === time) ?? -1;
        return at >= 0 ? { at, points: data.points, text } : undefined;
      }, UI_WAIT, 100);
      // Three points back from the latest (four, if a point was added while the keys were pressed).
      expect(stepped.points.length - 1 - stepped.at).toBeGreaterThanOrEqual(3);
      expect(stepped.points.length - 1 - stepped.at).toBeLessThanOrEqual(4);
      const keyedAvg = stepped.points[stepped.at].cpu_percent.avg;
      expect(stepped.text).toContain(keyedAvg < 10 ? `${keyedAvg.toFixed(1)} %` : `${Math.round(keyedAvg)} %`);

      // In a phone's width the charts stack, each as wide as the page allows, and still nothing overflows.
      await page.setViewportSize({ width: 420, height: 800 });
      for (const label of ['CPU', 'Memory']) {
        const narrow = page.getByRole('figure', { name: label, exact: true });
        await eventually(async () => ((await narrow.getByRole('img').boundingBox())?.width ?? 999) <= 400, UI_WAIT);
        await expectFramed(page, narrow, `${label} at 420 px`);
      }
      await page.screenshot({ path: join(SHOTS, 'server-page-420.png'), fullPage: true });
    });
  }, 120_000);

  it('draw the fleet\'s running editors, their memory and its idle stops on the health page', async () => {
    await withCleanPage(browser, service.url, 'usage-fleet', UI_WAIT, async ({ page }) => {
      const answers = answersTo(page, '/usage');
      await page.goto(`${service.url}/#/health`);
      await page.getByRole('heading', { level: 2, name: 'Fleet usage' }).waitFor();
      const running = await shoot(page, 'Running editors', answers, 'fleet-running');
      const sampled = running.data.points.filter((p: any) => p.running);
      expectLineMatches(running, sampled.map((p: any) => ({ time: p.time, value: p.running.avg })), 'Running editors');
      // It stepped up to three editors and back down to two after the idle stop.
      const maxima = sampled.map((p: any) => p.running.max);
      expect(Math.max(...maxima)).toBe(3);
      expect(maxima.at(-1)).toBe(2);
      expect(running.max).toBe(3);
      await expectFramed(page, page.getByRole('figure', { name: 'Running editors', exact: true }), 'Running editors');

      const memory = await shoot(page, 'Editor memory', answers, 'fleet-memory');
      expectLineMatches(memory, memory.data.points.filter((p: any) => p.memory_mb).map((p: any) => ({ time: p.time, value: p.memory_mb.avg })), 'Editor memory');

      // The idle stop: a bar in its second, from the axis up to its count.
      const stops = await shoot(page, 'Idle stops', answers, 'fleet-idle-stops');
      const stop = stops.data.points.find((p: any) => p.idle_stops > 0);
      expect(stop, 'an idle stop within the window').toBeDefined();
      const bar = place(stops, stop.time, stop.idle_stops);
      const rows = colouredRows(stops, bar.x);
      expect(rows.length, 'the bar is drawn').toBeGreaterThan(0);
      expect(Math.abs(Math.min(...rows) - bar.y), 'the bar reaches its count').toBeLessThanOrEqual(SLACK);
      expect(Math.abs(Math.max(...rows) - (stops.plot.top + stops.plot.height)), 'the bar stands on the axis').toBeLessThanOrEqual(SLACK);
      // Nowhere else is a bar.
      const elsewhere = [];
      for (let x = Math.ceil(stops.plot.left); x < stops.plot.left + stops.plot.width; x++) {
        if (Math.abs(x - bar.x) > 8 && columnRows(stops, x).length > 0) elsewhere.push(x);
      }
      expect(elsewhere).toEqual([]);
      await expectFramed(page, page.getByRole('figure', { name: 'Idle stops', exact: true }), 'Idle stops');
      await page.screenshot({ path: join(SHOTS, 'health-page.png'), fullPage: true });
    });
  }, 120_000);
});
