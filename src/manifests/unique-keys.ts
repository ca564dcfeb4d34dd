// Duplicate keys in a manifest, found in linear time. The YAML library's own check compares each
// key of a mapping with every key before it: a 256 KiB manifest of short settings keys (19,000 of
// them) blocked the service for 4.5 s at every read. Parse with `uniqueKeys: false`, then ask this.
import { isScalar, visit, type Document, type LineCounter } from 'yaml';

const MAX_REPORTED = 5;

/** One problem per key that repeats within its mapping, placed where it repeats: "Map keys must be unique: …". */
export function duplicateKeys(doc: Document, lineCounter: LineCounter): Array<{ line?: number; column?: number; problem: string }> {
  const problems: Array<{ line?: number; column?: number; problem: string }> = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        // The library's rule: scalar keys are the same when their values are; other keys never are.
        if (!isScalar(key)) continue;
        // A few are enough to fix the file.
        if (seen.has(key.value) && problems.length < MAX_REPORTED) {
          const at = key.range ? lineCounter.linePos(key.range[0]) : undefined;
          problems.push({ line: at?.line, column: at?.col, problem: `Map keys must be unique: "${String(key.value)}" appears again` });
        }
        seen.add(key.value);
      }
    },
  });
  return problems;
}
