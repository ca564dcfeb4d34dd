// Two rules of the service's shape that the import graph does not show:
// - Only the place that builds the runtime (src/service-runtime.ts) and the runtimes themselves
//   (src/runtime/) know which runtimes there are: no other file branches on a runtime's kind or
//   asks whether an object is one runtime's class. The config (src/config/) reads `runtime.kind`
//   as the operator wrote it, which is not a branch on a runtime.
// - The composition root builds every part from parts already built: no closure in buildParts
//   names a part declared further down (a reference set later, which the order of construction
//   hides), and no deferred-reference holder (a `Late`, a `.set()` after the fact) exists.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectFile } from '../../src/core/project.ts';
import { sourceFiles } from './source-files.ts';

const SRC = projectFile('src');
const KIND_ALLOWED = ['service-runtime.ts', 'runtime/', 'config/'];
/** A comparison with a runtime's kind, or a test of one runtime's class. */
const KIND_BRANCH = /\bkind\s*[!=]==?\s*['"](process|kubernetes)['"]|['"](process|kubernetes)['"]\s*[!=]==?\s*[\w.?]*\bkind\b|instanceof\s+(ProcessWorkload|LocalStorage|KubernetesWorkload|KubernetesStorage)\b/;

/** The file's lines with comments blanked (line numbers kept). */
function codeLines(text: string): string[] {
  return text.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).split('\n').map((line) => line.replace(/(^|[^:'"`])\/\/.*$/, '$1'));
}

/** `kind` branches outside the files allowed to know the runtimes: file:line: code. */
export function kindBranches(files: Array<{ file: string; text: string }>): string[] {
  return files.flatMap(({ file, text }) => {
    if (KIND_ALLOWED.some((allowed) => file.startsWith(allowed))) return [];
    return codeLines(text).flatMap((line, i) => (KIND_BRANCH.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
  });
}

/** Names used, inside buildParts, on a line above the one that declares them. */
export function forwardReferences(text: string): string[] {
  const lines = codeLines(text);
  const start = lines.findIndex((line) => /export async function buildParts\b/.test(line));
  if (start < 0) throw new Error('service-parts.ts has no buildParts');
  const declared = new Map<string, number>();
  lines.forEach((line, i) => {
    if (i <= start) return;
    // Declarations at the function's own level (two spaces in): the parts.
    for (const match of line.matchAll(/^ {2}(?:const|let)\s+(?:\{([^}]*)\}|(\w+))/g)) {
      const names = match[1] ? match[1].split(',').map((n) => n.split(':').pop()!.trim()) : [match[2]];
      for (const name of names) if (name && !declared.has(name)) declared.set(name, i);
    }
  });
  const found: string[] = [];
  for (const [name, at] of declared) {
    // A use before its declaration; a property key (`name:`, `.name`) is not a use.
    const use = new RegExp(`(?<![.\\w])${name}\\b(?!\\s*:(?!:))`);
    for (let i = start + 1; i < at; i++) if (use.test(lines[i])) found.push(`line ${i + 1}: ${name} (declared on line ${at + 1})`);
  }
  return found;
}

describe('the service\'s shape', () => {
  const files = sourceFiles(SRC).map((path) => ({ file: relative(SRC, path), text: readFileSync(path, 'utf8') }));

  it('branches on a runtime\'s kind only where the runtime is built', () => {
    expect(kindBranches(files), 'ask the runtime for what it can do (an optional method, a field) instead').toEqual([]);
  });

  it('builds every part of the service from parts already built', () => {
    const parts = files.find((f) => f.file === 'service-parts.ts')!;
    expect(forwardReferences(parts.text), 'build the part used before the one that uses it').toEqual([]);
    expect(files.filter((f) => /\bclass Late\b|\bnew Late\b/.test(f.text)).map((f) => f.file)).toEqual([]);
  });

  it('finds what it looks for', () => {
    expect(kindBranches([
      { file: 'api/x.ts', text: "if (runtime.kind === 'process') stop();\n// kind === 'kubernetes' in a comment\nif (x instanceof KubernetesWorkload) {}" },
      { file: 'service-runtime.ts', text: "if (settings.runtime?.kind === 'kubernetes') build();" },
    ])).toEqual(["api/x.ts:1: if (runtime.kind === 'process') stop();", 'api/x.ts:3: if (x instanceof KubernetesWorkload) {}']);
    const root = [
      'export async function buildParts() {',
      '  const capacity = new Capacity({ running: () => controller.running() });',
      '  const controller = new Controller({ capacity, controller: 1 });',
      '}',
    ].join('\n');
    expect(forwardReferences(root)).toEqual(['line 2: controller (declared on line 3)']);
  });
});
