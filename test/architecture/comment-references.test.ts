// Comments that name a source file name one that exists: a reader sent to `process-runtime.ts`
// when the class lives in processes.ts loses time, and such names go stale silently when a file
// is renamed or split.
//
// The rule, kept simple: in every comment of the .ts and .tsx files under src/ and web/src/, a
// word ending in .ts, .tsx or .mjs (`walk.ts`, `controller/decide.ts`, `scripts/install-editor.mjs`)
// is a file name, URLs aside. It must name a file relative to the commenting file's folder, to its
// source root (src/ or web/src/), or to the repository's root.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectFile } from '../../src/core/project.ts';
import { sourceFiles } from './source-files.ts';

const SOURCE_ROOTS = ['src', 'web/src'];
/** A file name: optional folders, then a name ending in a source extension; not inside a longer word or path. */
const FILE_NAME = /(?<![\w./@-])((?:\.{1,2}\/)?(?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|tsx|mjs))(?![\w/])/g;
const URL = /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi;

/**
 * The comments of a TypeScript file with the line each starts on. Strings, template literals and
 * regular expression literals are skipped, so `'//'` in a string or `/\/\*\/` is not a comment.
 */
function commentsOf(text: string): Array<{ line: number; text: string }> {
  const comments: Array<{ line: number; text: string }> = [];
  let line = 1;
  // What came last outside a comment: a `/` after an operator or a keyword starts a regular expression.
  let last = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '\n') {
      line++;
    } else if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
      comments.push({ line, text: text.slice(i + 2, end) });
      i = end - 1;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2) < 0 ? text.length : text.indexOf('*/', i + 2);
      const body = text.slice(i + 2, end);
      comments.push({ line, text: body });
      line += body.split('\n').length - 1;
      i = end + 1;
    } else if (c === '"' || c === '\'' || c === '`') {
      i = skipString(text, i, (newlines) => (line += newlines));
      last = 'value';
    } else if (c === '/' && (last === '' || last === 'keyword' || /^[(,=:[!&|?{};+\-*%<>~^]$/.test(last))) {
      i = skipRegExp(text, i);
      last = 'value';
    } else if (!/\s/.test(c)) {
      if (/\w/.test(c)) {
        const word = /^\w+/.exec(text.slice(i, i + 20))![0];
        last = ['return', 'typeof', 'case', 'in', 'of', 'void', 'yield', 'await'].includes(word) ? 'keyword' : 'value';
        i += word.length - 1;
      } else {
        last = c;
      }
    }
  }
  return comments;
}

/** The index of a string's closing quote; a template literal's `${…}` is skipped as a whole. */
function skipString(text: string, start: number, newlines: (count: number) => void): number {
  const quote = text[start];
  let depth = 0;
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '\n') newlines(1);
    else if (quote === '`' && c === '$' && text[i + 1] === '{') depth++;
    else if (depth > 0 && c === '}') depth--;
    else if (depth === 0 && c === quote) return i;
  }
  return text.length;
}

/** The index of a regular expression literal's closing `/` (a `/` inside a class [...] does not close it). */
function skipRegExp(text: string, start: number): number {
  let inClass = false;
  for (let i = start + 1; i < text.length && text[i] !== '\n'; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    else if (c === '/' && !inClass) return i;
  }
  return start;
}

/** Every file name a comment gives that names no file, as `file:line: name`. */
function staleNames(): Array<{ file: string; line: number; name: string }> {
  const root = projectFile('.');
  return SOURCE_ROOTS.flatMap((sourceRoot) => sourceFiles(projectFile(sourceRoot)).flatMap((path) => {
    const bases = [dirname(path), projectFile(sourceRoot), root];
    return commentsOf(readFileSync(path, 'utf8')).flatMap((comment) =>
      [...comment.text.replace(URL, '').matchAll(FILE_NAME)]
        .map((match) => match[1])
        .filter((name) => !bases.some((base) => existsSync(join(base, name))))
        .map((name) => ({ file: relative(root, path), line: comment.line, name })));
  }));
}

describe('file names in comments', () => {
  const stale = staleNames();

  it('name files that exist', () => {
    const unknown = stale.map(({ file, line, name }) => `${file}:${line}: ${name}`);
    expect(unknown, 'these comments name files that are not there: name the file as it is now').toEqual([]);
  });

  it('are found in line and block comments, and not in strings or regular expressions', () => {
    const text = [
      '// one.ts',
      "const url = 'https://example.com/two.ts'; // three.ts",
      'const pattern = /\\/\\/ four.ts/; const s = "// five.ts";',
      '/** six.ts',
      ' *  seven/eight.ts */ const t = `// nine.ts ${"x"}`;',
    ].join('\n');
    const names = commentsOf(text).flatMap(({ line, text: body }) => [...body.matchAll(FILE_NAME)].map((match) => `${line} ${match[1]}`));
    expect(names).toEqual(['1 one.ts', '2 three.ts', '4 six.ts', '4 seven/eight.ts']);
  });
});
