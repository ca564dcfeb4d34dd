// The audit trail's file and chain: entries appended as lines, each linked to the one before by
// hash; rotation by size with the chain going on across files; a restart that continues the chain;
// a torn last line set aside and reported; and verification that points at an entry altered,
// removed or moved, and at a cut end when a hash known from elsewhere is given.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/audit/audit-log.ts';
import { entryHash, GENESIS, type AuditEntry, type AuditInput } from '../../src/audit/entry.ts';
import { linesBackwards, readPage } from '../../src/audit/query.ts';
import { verifyAuditDir } from '../../src/audit/verify.ts';

let dir: string;
let logs: string[];
const open: AuditLog[] = [];
beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-'));
  logs = [];
});
afterEach(async () => {
  for (const log of open.splice(0)) log.close();
  await fs.rm(dir, { recursive: true, force: true });
});

const openLog = (options: { maxFileBytes?: number; keepFiles?: number } = {}) => {
  const log = AuditLog.open({ dir, log: (m) => logs.push(m), ...options });
  open.push(log);
  return log;
};
const input = (n: number, more: Partial<AuditInput> = {}): AuditInput => ({
  actor: n % 2 ? 'ada@example.com' : 'local', door: 'api', action: n % 3 ? 'start' : 'stop', server_id: `id-${n % 4}`, server_name: `s${n % 4}`, outcome: 'ok', ...more,
});
const linesOf = async (file: string) => (await fs.readFile(join(dir, file), 'utf8')).split('\n').filter(Boolean);
const entriesOf = async (file: string) => (await linesOf(file)).map((line) => JSON.parse(line) as AuditEntry);

describe('the audit log', () => {
  it('appends one line per entry, each chained to the one before by the hash of its canonical JSON', async () => {
    const log = openLog();
    for (let n = 1; n <= 5; n++) log.record(input(n));
    log.flush();
    const entries = await entriesOf('audit.jsonl');
    expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(entries[0].prev).toBe(GENESIS);
    for (let i = 1; i < entries.length; i++) expect(entries[i].prev).toBe(entries[i - 1].hash);
    for (const entry of entries) expect(entry.hash).toBe(entryHash(entry));
    expect(log.state()).toMatchObject({ last_seq: 5, last_hash: entries[4].hash });
    expect(await verifyAuditDir(dir)).toMatchObject({ ok: true, entries: 5, last_seq: 5 });
  });

  it('rotates by size, and the first entry of each new file links to the last of the one before', async () => {
    const log = openLog({ maxFileBytes: 1500, keepFiles: 100 });
    for (let n = 1; n <= 40; n++) log.record(input(n));
    log.flush();
    const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.jsonl')).sort();
    expect(files.length).toBeGreaterThan(3);
    expect(files.at(-1)).toBe('audit.jsonl');
    for (const file of files) expect((await fs.stat(join(dir, file))).size).toBeLessThanOrEqual(1500);
    const rotated = files.filter((f) => f !== 'audit.jsonl');
    const firstOfSecond = (await entriesOf(rotated[1]))[0];
    const lastOfFirst = (await entriesOf(rotated[0])).at(-1)!;
    expect(firstOfSecond.prev).toBe(lastOfFirst.hash);
    expect(rotated[1]).toBe(`audit-${String(firstOfSecond.seq).padStart(12, '0')}.jsonl`);
    expect(await verifyAuditDir(dir)).toMatchObject({ ok: true, entries: 40, files: files.length });
  });

  it('keeps only keepFiles rotated files, and verification says where the kept chain is anchored', async () => {
    const log = openLog({ maxFileBytes: 1000, keepFiles: 2 });
    for (let n = 1; n <= 40; n++) log.record(input(n));
    log.flush();
    const rotated = (await fs.readdir(dir)).filter((f) => /^audit-\d+\.jsonl$/.test(f));
    expect(rotated).toHaveLength(2);
    const result = await verifyAuditDir(dir);
    expect(result.ok).toBe(true);
    expect(result.anchored_at?.file).toBe(rotated.sort()[0]);
    expect(result.last_seq).toBe(40);
  });

  it('continues the chain after a restart, from the current file or, when it is empty, from the newest rotated one', async () => {
    let log = openLog({ maxFileBytes: 1200 });
    for (let n = 1; n <= 12; n++) log.record(input(n));
    const before = log.state();
    log.close();
    log = openLog({ maxFileBytes: 1200 });
    expect(log.state()).toMatchObject({ last_seq: before.last_seq, last_hash: before.last_hash });
    const next = log.record(input(13));
    expect(next).toMatchObject({ seq: 13, prev: before.last_hash });
    log.close();
    // The current file emptied (as just after a rotation): the newest rotated file carries the chain.
    await fs.writeFile(join(dir, 'audit.jsonl'), '');
    const rotatedLast = (await entriesOf((await fs.readdir(dir)).filter((f) => /^audit-\d+/.test(f)).sort().at(-1)!)).at(-1)!;
    log = openLog({ maxFileBytes: 1200 });
    expect(log.record(input(14))).toMatchObject({ seq: rotatedLast.seq + 1, prev: rotatedLast.hash });
  });

  it('sets a torn last line aside, says so in the log and in the trail, and chains on from the last whole entry', async () => {
    let log = openLog();
    for (let n = 1; n <= 3; n++) log.record(input(n));
    const last = log.state();
    log.close();
    // A crash in the middle of a write: half a line, no newline.
    await fs.appendFile(join(dir, 'audit.jsonl'), '{"seq":4,"time":"2026-11-29T');
    log = openLog();
    const torn = log.state().torn!;
    expect(torn).toMatch(/^torn-.*\.txt$/);
    expect(await fs.readFile(join(dir, torn), 'utf8')).toBe('{"seq":4,"time":"2026-11-29T');
    expect(logs.join('\n')).toContain(`set aside in ${torn}`);
    log.flush();
    const entries = await entriesOf('audit.jsonl');
    expect(entries.at(-1)).toMatchObject({ seq: 4, prev: last.last_hash, action: 'audit-recovered', outcome: 'failed' });
    expect(await verifyAuditDir(dir)).toMatchObject({ ok: true, entries: 4 });
  });
});

describe('verifying the chain', () => {
  const fill = async (count: number) => {
    const log = openLog();
    for (let n = 1; n <= count; n++) log.record(input(n));
    log.close();
    open.splice(open.indexOf(log), 1);
  };

  it('points at an entry whose content was altered', async () => {
    await fill(6);
    const lines = await linesOf('audit.jsonl');
    const altered = JSON.parse(lines[3]) as AuditEntry;
    altered.actor = 'mallory@example.com';
    lines[3] = JSON.stringify(altered);
    await fs.writeFile(join(dir, 'audit.jsonl'), `${lines.join('\n')}\n`);
    const result = await verifyAuditDir(dir);
    expect(result.ok).toBe(false);
    expect(result.broken).toMatchObject({ file: 'audit.jsonl', line: 4, seq: 4 });
    expect(result.broken!.problem).toContain('altered');
  });

  it('points at an entry altered with its own hash made again: the next one no longer follows it', async () => {
    await fill(6);
    const lines = await linesOf('audit.jsonl');
    const altered = JSON.parse(lines[2]) as AuditEntry;
    altered.outcome = 'refused';
    altered.hash = entryHash(altered);
    lines[2] = JSON.stringify(altered);
    await fs.writeFile(join(dir, 'audit.jsonl'), `${lines.join('\n')}\n`);
    expect((await verifyAuditDir(dir)).broken).toMatchObject({ line: 4, seq: 4, problem: expect.stringContaining('removed, reordered or inserted') });
  });

  it('points at the place of an entry removed, and of two entries swapped', async () => {
    await fill(6);
    const lines = await linesOf('audit.jsonl');
    await fs.writeFile(join(dir, 'audit.jsonl'), `${lines.filter((_, i) => i !== 2).join('\n')}\n`);
    expect((await verifyAuditDir(dir)).broken).toMatchObject({ line: 3, seq: 4 });

    const swapped = [...lines];
    [swapped[1], swapped[2]] = [swapped[2], swapped[1]];
    await fs.writeFile(join(dir, 'audit.jsonl'), `${swapped.join('\n')}\n`);
    expect((await verifyAuditDir(dir)).broken).toMatchObject({ line: 2, seq: 3, problem: expect.stringContaining('reordered') });
  });

  it('finds newest entries cut off only against a hash known from elsewhere', async () => {
    await fill(6);
    const lines = await linesOf('audit.jsonl');
    const known = JSON.parse(lines[5]) as AuditEntry;
    await fs.writeFile(join(dir, 'audit.jsonl'), `${lines.slice(0, 4).join('\n')}\n`);
    // On its own the shorter chain is whole.
    expect(await verifyAuditDir(dir)).toMatchObject({ ok: true, last_seq: 4 });
    const result = await verifyAuditDir(dir, { expect: { seq: known.seq, hash: known.hash } });
    expect(result.ok).toBe(false);
    expect(result.broken!.problem).toContain('cut off');
  });
});

describe('reading pages', () => {
  it('pages newest first through rotated files with a cursor, filtered', async () => {
    const log = openLog({ maxFileBytes: 1500, keepFiles: 100 });
    for (let n = 1; n <= 30; n++) log.record(input(n));
    log.flush();
    const seen: number[] = [];
    let cursor: number | undefined;
    for (;;) {
      const page = await readPage(dir, { server: 's1' }, 3, cursor);
      seen.push(...page.entries.map((e) => e.seq));
      if (page.next_cursor === null) break;
      cursor = Number(page.next_cursor);
    }
    const expected = Array.from({ length: 30 }, (_, i) => i + 1).filter((n) => n % 4 === 1).reverse();
    expect(seen).toEqual(expected);
    const stops = await readPage(dir, { actions: ['stop'], actor: 'local' }, 100, undefined);
    expect(stops.entries.every((e) => e.action === 'stop' && e.actor === 'local')).toBe(true);
    expect(stops.entries.map((e) => e.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1).filter((n) => n % 3 === 0 && n % 2 === 0).reverse());
  });
});

describe('reading a file from its end', () => {
  it('gives every line, last first, across chunks and characters of several bytes cut at a chunk\'s edge', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `${i} ${'é→'.repeat(150 + (i % 37))} ${i}`);
    const file = join(dir, 'lines.txt');
    await fs.writeFile(file, `${lines.join('\n')}\n`);
    const read: string[] = [];
    for await (const line of linesBackwards(file)) read.push(line);
    expect(read).toEqual([...lines].reverse());
    await fs.writeFile(file, 'no newline at the end');
    const single: string[] = [];
    for await (const line of linesBackwards(file)) single.push(line);
    expect(single).toEqual(['no newline at the end']);
  });
});
