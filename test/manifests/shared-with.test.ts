// spec.access.sharedWith in a hand-written manifest: people as the sign-on names them, in any
// case; anything else makes the manifest invalid with the field named, as the API would refuse it.
import { describe, expect, it } from 'vitest';
import { sharedWithOf } from '../../src/api/access.ts';
import { parseManifest } from '../../src/manifests/parse.ts';

function manifestWith(access: string): string {
  return [
    'apiVersion: devbox.dev/v1alpha1',
    'kind: EditorServer',
    'metadata: { name: team }',
    'spec:',
    '  running: true',
    `  access: ${access}`,
  ].join('\n');
}

describe('spec.access.sharedWith in a manifest', () => {
  it('is read as the people it names, compared in lower case and each once', () => {
    const read = parseManifest('team', manifestWith('{ sharedWith: [Ada@Example.com, "1002@42", ada@example.com, "o\'brien@example.ie"] }'));
    expect(read.kind).toBe('ok');
    if (read.kind !== 'ok') return;
    expect(read.server.spec.access?.sharedWith).toEqual(['Ada@Example.com', '1002@42', 'ada@example.com', "o'brien@example.ie"]);
    expect([...sharedWithOf(read.server)]).toEqual(['ada@example.com', '1002@42', "o'brien@example.ie"]);
    // Built once per version of the manifest: the same set for the same parsed manifest.
    expect(sharedWithOf(read.server)).toBe(sharedWithOf(read.server));
  });

  it.each([
    ['{ sharedWith: ["ada smith"] }', "team.yaml:6:26: spec.access.sharedWith.0: must be an email address or user id as the sign-on forwards it (letters, digits and . _ % + - ' @, no spaces), such as ada@example.com"],
    ['{ sharedWith: [ada@example.com, "bob@example.com, eve@example.com"] }', "team.yaml:6:43: spec.access.sharedWith.1: must be an email address or user id as the sign-on forwards it (letters, digits and . _ % + - ' @, no spaces), such as ada@example.com"],
    ['{ sharedWith: [ada@example.com, ada@example.com] }', 'team.yaml:6:25: spec.access.sharedWith: must NOT have duplicate items (items ## 0 and 1 are identical)'],
    ['{ sharedWith: [42] }', 'team.yaml:6:26: spec.access.sharedWith.0: must be string'],
    ['{ sharedWith: ada@example.com }', 'team.yaml:6:25: spec.access.sharedWith: must be array'],
    ['{ shareWith: [ada@example.com] }', 'team.yaml:6:13: spec.access: unknown field "shareWith"'],
  ])('refuses %s, naming the field', (access, problem) => {
    const read = parseManifest('team', manifestWith(access));
    expect(read.kind).toBe('invalid');
    if (read.kind === 'invalid') expect(read.errors).toEqual([problem]);
  });

  it('refuses more than 100 people', () => {
    const people = Array.from({ length: 101 }, (_, i) => `p${i}@example.com`).join(', ');
    const read = parseManifest('team', manifestWith(`{ sharedWith: [${people}] }`));
    expect(read.kind).toBe('invalid');
    if (read.kind === 'invalid') expect(read.errors).toEqual([expect.stringMatching(/spec\.access\.sharedWith: must NOT have more than 100 items$/)]);
  });
});
