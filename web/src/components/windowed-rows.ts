// Which rows of a long table are in the DOM: those in the window, and some above and below, while
// the page scrolls as usual (the table keeps its full height with one spacer row above and one
// below). At 10,000 servers the table holds a few dozen rows, so a render, a sort or a filter costs
// what those cost. Rows are taken to be as tall as the rendered ones are on average.
import type { RefObject } from 'preact';
import { useLayoutEffect, useState } from 'preact/hooks';

/**
 * Up to this many rows, all are rendered (find-in-page and printing see every one). Kept near
 * what a window shows anyway: each row is some 30 elements, its menu and dialog included, and a
 * keystroke in the filter box that brings the count under it renders all of them at once.
 */
export const ALL_ROWS_UP_TO = 50;
/** Rows rendered beyond each edge of the window, so keyboard focus and a quick scroll find rows there. */
const OVERSCAN = 10;
const FIRST_GUESS_PX = 44;

export interface Window {
  /** The first row rendered, and one past the last. */
  start: number;
  end: number;
  /** Heights of the spacers before and after them. */
  before: number;
  after: number;
}

/**
 * The rows of `count` to render in `body` (the tbody), following the window's scroll and size.
 * `body`'s rows marked `data-row` are measured for the row height whenever other rows are rendered.
 */
export function useWindowedRows(count: number, body: RefObject<HTMLElement | null>): Window {
  const all = count <= ALL_ROWS_UP_TO;
  const [rowHeight, setRowHeight] = useState(FIRST_GUESS_PX);
  const [range, setRange] = useState({ start: 0, end: Math.min(count, 40) });

  // Before the browser paints, so the first frame of a long table already has its rows.
  useLayoutEffect(() => {
    if (all) return;
    let frame = 0;
    const update = () => {
      frame = 0;
      const el = body.current;
      if (!el) return;
      const top = el.getBoundingClientRect().top;
      const first = Math.max(0, Math.floor(-top / rowHeight) - OVERSCAN);
      const last = Math.max(first, Math.ceil((innerHeight - top) / rowHeight) + OVERSCAN);
      const next = { start: Math.min(first, count), end: Math.min(last, count) };
      setRange((current) => (current.start === next.start && current.end === next.end ? current : next));
    };
    const schedule = () => {
      frame ||= requestAnimationFrame(update);
    };
    update();
    addEventListener('scroll', schedule, { passive: true });
    addEventListener('resize', schedule, { passive: true });
    return () => {
      cancelAnimationFrame(frame);
      removeEventListener('scroll', schedule);
      removeEventListener('resize', schedule);
    };
  }, [all, count, rowHeight, body]);

  // The rendered rows' average height, once they are laid out (before the browser paints), when
  // other rows are rendered: a measure forces a layout, which a re-render of the same rows need not.
  useLayoutEffect(() => {
    const rows = body.current?.querySelectorAll<HTMLElement>('tr[data-row]');
    if (!rows || rows.length === 0) return;
    const height = (rows[rows.length - 1]!.getBoundingClientRect().bottom - rows[0]!.getBoundingClientRect().top) / rows.length;
    if (height > 0 && Math.abs(height - rowHeight) > 0.5) setRowHeight(height);
  }, [count, range.start, range.end]);

  if (all) return { start: 0, end: count, before: 0, after: 0 };
  const start = Math.min(range.start, count);
  const end = Math.min(Math.max(range.end, start), count);
  return { start, end, before: start * rowHeight, after: (count - end) * rowHeight };
}
