// YAML read with the place of every problem: a parse error, or a schema error's line and column,
// so an operator editing a file by hand is told where to look ("config.yaml:12:5: ...").
import type { ErrorObject } from 'ajv';
import { isMap, isNode, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { describeErrors } from './schema-errors.ts';

/** One problem of a file; line and column are 1-based, absent when the problem is the whole file's. */
export interface FileProblem {
  file: string;
  line?: number;
  column?: number;
  problem: string;
}

/** "file:line:column: problem", or "file: problem" without a place. */
export function formatProblem(p: FileProblem): string {
  return `${p.file}${p.line ? `:${p.line}${p.column ? `:${p.column}` : ''}` : ''}: ${p.problem}`;
}

export type LocatedYaml = { value: unknown; locate: (errors: ErrorObject[] | null | undefined) => FileProblem[]; problems?: undefined } | { problems: FileProblem[] };

/**
 * Parses YAML (or JSON) text. A syntax error gives its problems, each with its place; otherwise
 * `locate` turns ajv's errors for the value into problems placed at the field they name (or at
 * the nearest enclosing one that exists in the text).
 */
export function parseYamlLocated(file: string, text: string): LocatedYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) return { problems: syntaxProblems(file, doc, lineCounter) };
  const value = doc.toJS({ maxAliasCount: 100 }) ?? {};
  return { value, locate: (errors) => locateErrors(file, doc, lineCounter, errors) };
}

/**
 * The syntax errors of a document already parsed with `lineCounter`, each at its place: for
 * callers that parse by other means (manifests: every document, without the quadratic check
 * of duplicate keys).
 */
export function syntaxProblems(file: string, doc: Document, lineCounter: LineCounter): FileProblem[] {
  return doc.errors.map((error) => {
    const at = lineCounter.linePos(error.pos[0]);
    return { file, line: at.line, column: at.col, problem: error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '') };
  });
}

/** ajv's errors for the value of a document parsed with `lineCounter`, each placed at its field. */
export function locateErrors(file: string, doc: Document, lineCounter: LineCounter, errors: ErrorObject[] | null | undefined): FileProblem[] {
  const texts = describeErrors(errors);
  return (errors ?? []).map((error, i) => {
    const path = error.instancePath.split('/').slice(1).map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
    // An unknown field is shown at its own key.
    if (error.keyword === 'additionalProperties') {
      const map = path.length === 0 ? doc.contents : doc.getIn(path, true);
      const key = isMap(map) ? map.items.find((pair) => isScalar(pair.key) && pair.key.value === (error.params as { additionalProperty: string }).additionalProperty)?.key : undefined;
      if (isNode(key) && key.range) {
        const at = lineCounter.linePos(key.range[0]);
        return { file, line: at.line, column: at.col, problem: texts[i] };
      }
    }
    // The deepest node of the path that the text has.
    for (let n = path.length; n >= 0; n--) {
      const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) {
        const at = lineCounter.linePos(node.range[0]);
        return { file, line: at.line, column: at.col, problem: texts[i] };
      }
    }
    return { file, problem: texts[i] };
  });
}
