// Manifest text to an EditorServer, never throwing: YAML syntax, one document, no duplicate
// keys, then the schema; every problem placed at its file, line and column (core/yaml-problems.ts)
// so a person can fix the file from the message alone.
import { LineCounter, parseAllDocuments } from 'yaml';
import { formatProblem, locateErrors, syntaxProblems, type FileProblem } from '../core/yaml-problems.ts';
import { manifestErrors } from './schema.ts';
import type { EditorServer } from './types.ts';
import { duplicateKeys } from './unique-keys.ts';

export const MANIFEST_EXT = '.yaml';

export type ManifestRead =
  | { kind: 'ok'; name: string; text: string; server: EditorServer }
  | { kind: 'invalid'; name: string; text?: string; errors: string[] }
  | { kind: 'missing'; name: string };

/**
 * Parses manifest text; never throws. Each problem starts with its place in the file,
 * "<file>:<line>:<column>: ", or "<file>: " when it is the whole file's.
 */
export function parseManifest(name: string, text: string, file = name + MANIFEST_EXT): ManifestRead {
  const invalid = (problems: FileProblem[]): ManifestRead => ({ kind: 'invalid', name, text, errors: problems.map(formatProblem) });
  const lineCounter = new LineCounter();
  let docs;
  try {
    // The library's duplicate-key check is quadratic; duplicateKeys() below is not.
    docs = parseAllDocuments(text, { lineCounter, uniqueKeys: false });
  } catch (error) {
    return invalid([{ file, problem: String((error as Error).message) }]);
  }
  if (!Array.isArray(docs)) return invalid([{ file, problem: 'the file could not be read as YAML' }]);
  if (docs.length === 0) return invalid([{ file, problem: 'the file is empty: write an EditorServer manifest' }]);
  if (docs.length !== 1) {
    const at = lineCounter.linePos(docs[1].range[0]);
    return invalid([{ file, line: at.line, column: at.col, problem: `the file holds ${docs.length} YAML documents: keep exactly one` }]);
  }
  const doc = docs[0];
  if (doc.errors.length > 0) return invalid(syntaxProblems(file, doc, lineCounter));
  const duplicates = duplicateKeys(doc, lineCounter);
  if (duplicates.length > 0) return invalid(duplicates.map((d) => ({ file, ...d })));
  let value: unknown;
  try {
    value = doc.toJS();
  } catch (error) {
    // For example yaml's guard against alias bombs ("Excessive alias count").
    return invalid([{ file, problem: String((error as Error).message) }]);
  }
  const errors = manifestErrors(value, name);
  if (errors.length > 0) return invalid(locateErrors(file, doc, lineCounter, errors));
  return { kind: 'ok', name, text, server: value as EditorServer };
}

