// Arrows down only: every import in src/ goes to its own folder, or to a folder lower in the
// layer order that docs/architecture.md writes down (the block between `<!-- layers:begin -->`
// and `<!-- layers:end -->`, read here, so the page and the check cannot drift apart). Siblings
// (names on one line) may not import each other; type-only and dynamic imports count too. A folder
// the order does not name fails the check until it is given its place.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectFile } from '../../src/core/project.ts';
import { sourceFiles } from './source-files.ts';

const SRC = projectFile('src');
const DOC = 'docs/architecture.md';
/** The layer of the files directly in src/ (main.ts, service.ts, doctor.ts). */
const ROOT = 'root';
/** Layers that read the servers through the index (src/index/) and act through its commands, never through the controller. */
const INDEX_READERS = ['api', 'proxy', 'metrics'];

/** The order, lowest first: each entry one layer, its folders siblings of each other. */
function readLayerOrder(markdown: string): string[][] {
  const block = /<!-- layers:begin -->\n([\s\S]*?)\n<!-- layers:end -->/.exec(markdown)?.[1];
  if (block === undefined) throw new Error(`${DOC} has no <!-- layers:begin --> … <!-- layers:end --> block`);
  return block.split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('```'))
    .map((line) => line.split(/\s+/));
}

interface Import {
  line: number;
  specifier: string;
}

/**
 * The relative specifiers a file imports: `import … from`, `import type … from`, `export … from`,
 * `import '…'` and `import('…')` (also `typeof import('…')`). Comment lines are skipped.
 */
function relativeImports(text: string): Import[] {
  const blankLines = (match: string) => match.replace(/[^\n]/g, ' ');
  const code = text.replace(/^[ \t]*\/\*[\s\S]*?\*\//gm, blankLines).replace(/^[ \t]*\/\/.*$/gm, blankLines);
  const clause = String.raw`(?:type\s+)?(?:\*(?:\s+as\s+[\w$]+)?|\{[^}]*\}|[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+[\w$]+))?)`;
  const patterns = [
    new RegExp(String.raw`\b(?:import|export)\s+${clause}\s*from\s*(['"])([^'"\n]+)\1`, 'g'),
    /\bimport\s*(['"])([^'"\n]+)\1/g,
    /\bimport\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g,
  ];
  const found: Import[] = [];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) {
      const specifier = match[2];
      if (!specifier.startsWith('.')) continue;
      const at = match.index + match[0].lastIndexOf(match[1] + specifier);
      found.push({ line: code.slice(0, at).split('\n').length, specifier });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

/** `root` for a file directly in src/, its top-level folder otherwise; undefined outside src/. */
function layerOf(path: string): string | undefined {
  const parts = relative(SRC, path).split(sep);
  if (parts[0] === '..' || parts[0] === '') return undefined;
  return parts.length === 1 ? ROOT : parts[0];
}

/** Each import against the order, as `file:line → module (why)`. */
function violations(order: string[][], files: { path: string; text: string }[]): string[] {
  const rank = new Map(order.flatMap((layer, i) => layer.map((name) => [name, i] as const)));
  const shown = (path: string) => relative(dirname(SRC), path);
  const found: string[] = [];
  for (const file of files) {
    const from = layerOf(file.path)!;
    for (const { line, specifier } of relativeImports(file.text)) {
      const target = resolve(dirname(file.path), specifier);
      const to = layerOf(target);
      const where = `${shown(file.path)}:${line} → ${to === undefined ? specifier : shown(target)}`;
      if (to === from) continue;
      if (to === undefined) found.push(`${where} (outside src/)`);
      else if (!rank.has(to)) found.push(`${where} (${to}/ has no place in the layer order of ${DOC})`);
      else if (!rank.has(from)) found.push(`${where} (${from}/ has no place in the layer order of ${DOC})`);
      else if (rank.get(to)! > rank.get(from)!) found.push(`${where} (${from} may not import ${to}: a higher layer)`);
      else if (rank.get(to) === rank.get(from)) found.push(`${where} (${from} may not import ${to}: siblings)`);
    }
  }
  return found;
}

describe('layers', () => {
  const order = readLayerOrder(readFileSync(projectFile(DOC), 'utf8'));
  const files = sourceFiles(SRC).map((path) => ({ path, text: readFileSync(path, 'utf8') }));

  it(`names every folder of src/ once in ${DOC}, and no folder that is not there`, () => {
    const named = order.flat();
    expect(named.filter((name, i) => named.indexOf(name) !== i), 'named twice').toEqual([]);
    const present = [...new Set(files.map((file) => layerOf(file.path)!))].sort();
    expect(present.filter((name) => !named.includes(name)), 'folders of src/ without a place in the order').toEqual([]);
    expect(named.filter((name) => !present.includes(name)), 'layers with no folder in src/').toEqual([]);
  });

  it('has every import in src/ point down the order, never up and never to a sibling', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(violations(order, files), `imports against the layer order of ${DOC}`).toEqual([]);
  });

  it(`has ${INDEX_READERS.join(', ')} import nothing of controller/: they read the index, and only the composition root wires the controller`, () => {
    const shown = (path: string) => relative(dirname(SRC), path);
    const reaching = files.filter((file) => INDEX_READERS.includes(layerOf(file.path)!)).flatMap((file) =>
      relativeImports(file.text)
        .filter(({ specifier }) => layerOf(resolve(dirname(file.path), specifier)) === 'controller')
        .map(({ line, specifier }) => `${shown(file.path)}:${line} → ${shown(resolve(dirname(file.path), specifier))}`));
    expect(files.some((file) => INDEX_READERS.includes(layerOf(file.path)!))).toBe(true);
    expect(reaching, 'imports of controller/ by a reader of the index').toEqual([]);
  });

  it('reads every kind of relative import, and the check catches each kind of wrong one', () => {
    const text = [
      "import { a } from '../core/a.ts';",
      "import type { B } from '../api/b.ts';",
      'import {',
      '  c,',
      "  type C } from './c.ts';",
      "export { d } from '../controller/d.ts';",
      "export * from '../runtime/e.ts';",
      "import '../templates/f.ts';",
      "const g = await import('../new-folder/g.ts');",
      "type H = typeof import('../../outside.ts');",
      "import { join } from 'node:path';",
      "// import { no } from '../api/commented.ts';",
      '/**',
      " * import { no } from '../api/documented.ts';",
      ' */',
      "export const i = 'not an import from \"../api/i.ts\"';",
    ].join('\n');
    expect(relativeImports(text).map(({ line, specifier }) => `${line} ${specifier}`)).toEqual([
      '1 ../core/a.ts', '2 ../api/b.ts', '5 ./c.ts', '6 ../controller/d.ts', '7 ../runtime/e.ts', '8 ../templates/f.ts',
      '9 ../new-folder/g.ts', '10 ../../outside.ts',
    ]);
    const testOrder = [['core'], ['runtime', 'templates'], ['controller'], ['api'], [ROOT]];
    expect(violations(testOrder, [{ path: join(SRC, 'runtime', 'x.ts'), text }])).toEqual([
      'src/runtime/x.ts:2 → src/api/b.ts (runtime may not import api: a higher layer)',
      'src/runtime/x.ts:6 → src/controller/d.ts (runtime may not import controller: a higher layer)',
      'src/runtime/x.ts:8 → src/templates/f.ts (runtime may not import templates: siblings)',
      `src/runtime/x.ts:9 → src/new-folder/g.ts (new-folder/ has no place in the layer order of ${DOC})`,
      'src/runtime/x.ts:10 → ../../outside.ts (outside src/)',
    ]);
  });
});
