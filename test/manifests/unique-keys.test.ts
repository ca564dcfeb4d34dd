// Duplicate keys make a manifest invalid, found without the YAML library's quadratic check, so a
// hand-written file of many keys costs a read of milliseconds per KiB instead of seconds.
import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifests/store.ts';
import { manyKeysManifest } from '../../bench/manifests.ts';

const head = 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: dup\n';

describe('duplicate keys in a manifest', () => {
  it('make it invalid at any depth, saying which key and where it repeats', () => {
    const top = parseManifest('dup', `${head}spec:\n  running: false\n  running: true\n`);
    expect(top).toMatchObject({ kind: 'invalid', errors: ['dup.yaml:7:3: Map keys must be unique: "running" appears again'] });
    const deep = parseManifest('dup', `${head}spec:\n  running: false\n  settings:\n    a: { b: 1, b: 2 }\n`);
    expect(deep).toMatchObject({ kind: 'invalid', errors: ['dup.yaml:8:16: Map keys must be unique: "b" appears again'] });
    // Different scalars are different keys, as the YAML library has it.
    expect(parseManifest('dup', `${head}spec:\n  running: false\n  settings: { "1": a, 1: b }\n`).kind).toBe('ok');
  });

  // What such a read costs beside the library's own (quadratic) check is `npm run bench -- manifests`.
  it('refuse a file of 19,000 settings keys (256 KiB) with the place and the limit', () => {
    const read = parseManifest('dup', manyKeysManifest());
    expect(read).toMatchObject({ kind: 'invalid', errors: [expect.stringMatching(/^dup\.yaml:8:5: spec\.settings: holds more than 1000 keys/)] });
  });
});
