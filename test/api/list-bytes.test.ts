// The list answer's bytes without JSON text per answer: uptimes written as digits must be the very
// bytes JSON.stringify gives for (now - start) / 1000, and a kept layout must give what assembling
// the records afresh gives, uptimes included.
import { describe, expect, it, vi } from 'vitest';
import { ListLayout, uptimeLength, writeUptime } from '../../src/api/list-bytes.ts';
import { recordsAsBytes, type FeedEntry } from '../../src/api/server-feed.ts';
import { prng } from '../helpers/prng.ts';

const out = Buffer.alloc(40);
/** The digits written at 2 in a buffer of underscores, or a note of what went wrong. */
const written = (now: number, start: number) => {
  out.fill(0x5f);
  const length = writeUptime(out, 2, now, start);
  if (length !== uptimeLength(now, start)) return `length ${length}, told ${uptimeLength(now, start)}`;
  // Nothing written outside its place.
  if (out[1] !== 0x5f || out[2 + length] !== 0x5f) return 'written outside';
  return out.toString('latin1', 2, 2 + length);
};

describe('an uptime written as digits', () => {
  it('is what JSON.stringify writes for the seconds, over every millisecond of the first ten minutes and at random beyond', () => {
    const now = 1_760_000_000_123;
    const wrong: string[] = [];
    const check = (ms: number) => {
      const want = JSON.stringify(Math.max(0, ms / 1000));
      const got = written(now + ms, now);
      if (got !== want && wrong.push(`${ms} ms: ${got}, not ${want}`) > 10) throw new Error(wrong.join('; '));
    };
    for (let ms = -2000; ms < 600_000; ms++) check(ms);
    for (let i = 0; i < 200_000; i++) check(Math.floor(Math.random() * 10 ** (1 + Math.random() * 12)));
    check(2 ** 52);
    expect(wrong).toEqual([]);
  });
});

/** An entry as the feed keeps it: JSON split around the uptime, or whole (no start time). */
function entry(name: string, startMs: number | undefined): FeedEntry {
  const prefix = `{"id":"${name}","name":"Ünïcode \\"${name}\\"","uptime":`;
  const suffix = `,"status":"running"}`;
  const json = `${prefix}0${suffix}`;
  return {
    name, id: name, server: {} as never, json, key: prefix + suffix, prefix, suffix, startMs,
    bytes: startMs === undefined ? { prefix: Buffer.from(json), suffix: Buffer.alloc(0) } : { prefix: Buffer.from(prefix), suffix: Buffer.from(suffix) },
  };
}

describe('a kept list layout', () => {
  const frame = { open: '[', before: (i: number) => (i === 0 ? '' : ','), after: '', close: ']' };

  it('assembles what recordsAsBytes assembles, at every moment, for lists with and without uptimes', () => {
    const now = Date.now();
    const lists = [
      [],
      [entry('a', undefined)],
      [entry('a', now - 1500)],
      [entry('a', now - 1), entry('b', undefined), entry('c', undefined), entry('d', now - 86_400_123), entry('e', now + 5000)],
      [entry('a', undefined), entry('b', now - 10)],
    ];
    const spy = vi.spyOn(Date, 'now');
    try {
      for (const entries of lists) {
        const layout = new ListLayout(entries);
        for (const at of [now, now + 1, now + 999, now + 1000, now + 123_456]) {
          spy.mockReturnValue(at);
          const fresh = recordsAsBytes(entries, frame, (n) => Buffer.alloc(n));
          const kept = layout.assemble(at, (n) => Buffer.alloc(n));
          expect(kept.toString()).toBe(fresh.toString());
          expect(() => JSON.parse(kept.toString())).not.toThrow();
        }
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('made from the layout before it, after random changes, inserts and removals, assembles what a fresh one does, and takes over unchanged pieces', () => {
    const random = prng(20261129);
    const now = Date.now();
    let list = Array.from({ length: 700 }, (_, i) => entry(`s${i}`, random() < 0.1 ? now - Math.floor(random() * 1e7) : undefined));
    let layout = new ListLayout(list);
    const concat = vi.spyOn(Buffer, 'concat');
    try {
      for (let round = 0; round < 40; round++) {
        list = [...list];
        // A stats sample: some running records replaced (new objects); now and then a create or a delete.
        for (let k = 0; k < 5; k++) {
          const at = Math.floor(random() * list.length);
          list[at] = entry(list[at].name, random() < 0.5 ? now - 1000 : undefined);
        }
        if (random() < 0.2) list.splice(Math.floor(random() * list.length), 0, entry(`new${round}`, undefined));
        if (random() < 0.2) list.splice(Math.floor(random() * list.length), 1);
        concat.mockClear();
        const next = new ListLayout(list, layout);
        const built = concat.mock.calls.length;
        concat.mockClear();
        const fresh = new ListLayout(list);
        // Five changed records rebuild at most three pieces each (before its uptime, after it, and
        // the one a start or stop splits or joins), not all of them (more than 60 here).
        if (list.length === layout.records.length) expect(built).toBeLessThanOrEqual(15);
        expect(concat.mock.calls.length).toBeGreaterThan(60);
        for (const at of [now, now + 1234]) {
          const want = recordsAsBytes(list, frame, (n) => Buffer.alloc(n)).toString();
          vi.spyOn(Date, 'now').mockReturnValue(at);
          expect(next.assemble(at, (n) => Buffer.alloc(n)).toString()).toBe(fresh.assemble(at, (n) => Buffer.alloc(n)).toString());
          vi.mocked(Date.now).mockRestore();
          expect(JSON.parse(next.assemble(at, (n) => Buffer.alloc(n)).toString()).length).toBe(JSON.parse(want).length);
        }
        layout = next;
      }
    } finally {
      concat.mockRestore();
    }
  });

  it('writes into exactly the length it asks for, and is kept only for the same records in the same order', () => {
    const a = entry('a', Date.now() - 5000);
    const b = entry('b', undefined);
    const layout = new ListLayout([a, b]);
    let asked = 0;
    const bytes = layout.assemble(Date.now(), (n) => Buffer.alloc((asked = n)));
    expect(bytes.length).toBe(asked);
    expect(layout.matchesAt(0, a) && layout.matchesAt(1, b)).toBe(true);
    expect(layout.matchesAt(0, b) || layout.matchesAt(2, a)).toBe(false);
    expect(ListLayout.usable([a, b])).toBe(true);
    // A start time Date.parse could not read: not for a layout; assembled afresh, its uptime is null as JSON.stringify has it.
    expect(ListLayout.usable([entry('c', Number.NaN)])).toBe(false);
    expect(JSON.parse(recordsAsBytes([entry('c', Number.NaN)], frame, (n) => Buffer.alloc(n)).toString())[0].uptime).toBeNull();
  });
});
