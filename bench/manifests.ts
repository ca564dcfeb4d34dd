// Reading a hand-written manifest of many keys: the store's read (duplicate keys found in one
// pass) beside the YAML library's own duplicate-key check, which is quadratic, on the same text.
import { parseDocument } from 'yaml';
import { parseManifest } from '../src/manifests/store.ts';
import { median, round } from './harness.ts';

/** A manifest of 255 KiB whose spec.settings has about 19,000 keys (the store refuses it past 1,000, with the place). */
export function manyKeysManifest(): string {
  let text = 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: dup\nspec:\n  running: false\n  settings:\n';
  for (let i = 0; text.length < 255 * 1024; i++) text += `    k${i}: 1\n`;
  return text;
}

export function benchManifestRead(rounds: number): object {
  const text = manyKeysManifest();
  const store: number[] = [];
  const library: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let started = performance.now();
    const read = parseManifest('dup', text);
    store.push(performance.now() - started);
    if (read.kind !== 'invalid') throw new Error('the many-keys manifest was not refused');
    started = performance.now();
    parseDocument(text, { uniqueKeys: true });
    library.push(performance.now() - started);
  }
  const storeMs = median(store);
  const libraryMs = median(library);
  return {
    keys: text.split('\n').length - 8,
    kib: Math.round(text.length / 1024),
    store_read_ms: round(storeMs),
    yaml_library_unique_keys_ms: round(libraryMs),
    store_over_library: round(storeMs / libraryMs, 3),
  };
}
