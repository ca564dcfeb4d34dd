import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RawLogFollower } from '../../src/logs/follower.ts';
import { eventually } from '../helpers/wait.ts';
import { FakeEditorOutput } from './fixtures.ts';

describe('reading an output file in batches', () => {
  let dir: string;
  let file: string;
  let editor: FakeEditorOutput;
  let follower: RawLogFollower;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devbox-follower-'));
    file = path.join(dir, 'editor.out');
    fs.writeFileSync(file, '');
    editor = new FakeEditorOutput(file);
    follower = new RawLogFollower(file, `${file}.offset`);
  });

  afterEach(async () => {
    editor.close();
    await follower.release();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const text = async (hold: boolean) => (await follower.read(hold)).data.toString('utf8');

  for (const hold of [false, true]) {
    it(`returns whole lines only and keeps a partial line for the next read (file ${hold ? 'kept open' : 'opened each read'})`, async () => {
      editor.write('abc');
      expect(await text(hold)).toBe('');
      editor.write('def\nghi');
      expect(await text(hold)).toBe('abcdef\n');
      expect(await text(hold)).toBe('');
      editor.write('\njkl\nmno\n');
      expect(await text(hold)).toBe('ghi\njkl\nmno\n');
      expect(await text(hold)).toBe('');
    });

    it(`cuts a line longer than one read into pieces, in order (file ${hold ? 'kept open' : 'opened each read'})`, async () => {
      const long = 'x'.repeat(256 * 1024) + 'y'.repeat(1000);
      editor.write(`${long}\nafter\n`);
      let all = '';
      for (let reads = 0; reads < 5; reads++) all += await text(hold);
      expect(all).toBe(`${'x'.repeat(256 * 1024)}${'y'.repeat(1000)}\nafter\n`);
      expect((await follower.read(hold)).data.length).toBe(0);
    });
  }

  it('reads a long line whole from a file kept open (its buffer grows rather than cutting the line)', async () => {
    expect(await text(true)).toBe(''); // opens and keeps the file
    const long = 'z'.repeat(100 * 1024);
    editor.write(`${long}\nshort\n`);
    const pieces: string[] = [];
    let more = true;
    while (more) {
      const read = await follower.read(true);
      if (read.data.length > 0) pieces.push(read.data.toString('utf8'));
      more = read.more;
    }
    // Whole lines only: no piece ends mid-line.
    for (const piece of pieces) expect(piece.endsWith('\n')).toBe(true);
    expect(pieces.join('')).toBe(`${long}\nshort\n`);
  });

  it('resumes after a restart exactly where the last commit left it', async () => {
    editor.write('one\ntwo\n');
    expect(await text(true)).toBe('one\ntwo\n');
    await follower.commit();
    editor.write('three\n');
    expect(await text(true)).toBe('three\n'); // read, not committed: a restart repeats it
    await follower.release();
    const again = new RawLogFollower(file, `${file}.offset`);
    expect((await again.read()).data.toString()).toBe('three\n');
  });

  it('holds back a commit within minIntervalMs, but not one after the file was emptied', async () => {
    editor.write('one\n');
    await text(true);
    await follower.commit();
    editor.write('two\n');
    await text(true);
    await follower.commit(60_000); // too soon: the saved offset stays after "one"
    expect(JSON.parse(fs.readFileSync(`${file}.offset`, 'utf8')).offset).toBe(4);
    // Once read past maxBytes the file is emptied: the offset must be saved at once.
    expect(follower.truncateIfConsumed(1).length).toBe(0);
    expect(fs.statSync(file).size).toBe(0);
    await follower.commit(60_000);
    expect(JSON.parse(fs.readFileSync(`${file}.offset`, 'utf8')).offset).toBe(0);
    editor.write('three\n');
    expect(await text(true)).toBe('three\n');
  });

  it('notices, with the file kept open, that the name now names another file', async () => {
    editor.write('old\n');
    expect(await text(true)).toBe('old\n');
    // The runtime re-creates the file (a new inode) and the editor writes there.
    editor.close();
    fs.rmSync(file);
    editor = new FakeEditorOutput(file);
    editor.write('new\n');
    // The kept file has nothing new; the check of the name comes at most a second later.
    expect(await eventually(async () => (await text(true)) || undefined, 5000)).toBe('new\n');
  });
});
