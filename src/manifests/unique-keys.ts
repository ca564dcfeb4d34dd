// Duplicate keys in a manifest, found in linear time. The YAML library's own check compares each
// key of a mapping with every key before it: a 256 KiB manifest of short settings keys (19,000 of
// them) blocked the service for 4.5 s at every read. Parse with `uniqueKeys: false`, then ask this.
import { isScalar, visit, type Document } from 'yaml';

const MAX_REPORTED = 5;

/** One message per key that repeats within its mapping, with where it repeats: "Map keys must be unique: …". */
export function duplicateKeys(doc: Document, text: string): string[] {
  const problems: string[] = [];
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        // The library's rule: scalar keys are the same when their values are; other keys never are.
        if (!isScalar(key)) continue;
        // A few are enough to fix the file; placing each costs a scan of the text before it.
        if (seen.has(key.value) && problems.length < MAX_REPORTED) {
          problems.push(`Map keys must be unique: "${String(key.value)}" appears again at ${position(text, key.range?.[0])}`);
        }
        seen.add(key.value);
      }
    },
  });
  return problems;
}

function position(text: string, offset: number | undefined): string {
  if (offset === undefined) return 'an unknown place';
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
}
