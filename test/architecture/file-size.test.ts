// No source file over 400 lines: a file that grows past it holds more than one idea, and is split
// along its seams (see docs/development.md). Counted as `wc -l` counts, over src/ and web/src/.
// A generated file (its first line says `// Generated from`, and names the command that writes
// it) is left out: nobody edits it, and its generator is the file kept small.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectFile } from '../../src/core/project.ts';
import { sourceFiles } from './source-files.ts';

const MAX_LINES = 400;

const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const generated = (text: string) => text.startsWith('// Generated from');

describe('source files', () => {
  it(`are at most ${MAX_LINES} lines each`, () => {
    const files = [...sourceFiles(projectFile('src')), ...sourceFiles(projectFile('web/src'))];
    expect(files.length).toBeGreaterThan(100);
    const long = files
      .map((path) => ({ path, text: readFileSync(path, 'utf8') }))
      .filter(({ text }) => !generated(text))
      .map(({ path, text }) => ({ file: relative(projectFile('.'), path), lines: lineCount(text) }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(long, `split these along their seams (at most ${MAX_LINES} lines a file)`).toEqual([]);
    expect(lineCount('a\nb\n')).toBe(2);
  });
});
