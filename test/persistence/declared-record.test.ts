// A server's declared record at the target: its digest follows what comes back after a restore
// (manifest, uid, port, settings), not what a running editor changes (pid, phase, health); a
// record that is not one of ours, or names another server, is refused with the reason.
import { describe, expect, it } from 'vitest';
import { declaredDigest, encodeDeclared, parseDeclared, type DeclaredRecord } from '../../src/persistence/declared.ts';

const record = (change: Partial<DeclaredRecord> = {}): DeclaredRecord => ({
  name: 'alpha',
  uid: '2b7e1516-28ae-4d2a-a6d2-abf7158809cf',
  at: '2026-11-29T10:00:00.000Z',
  manifestText: 'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: alpha\nspec:\n  running: false\n',
  kept: { generation: 2, status: { phase: 'Stopped', port: 20001, observedGeneration: 2 } },
  ...change,
});

describe('a declared record', () => {
  it('has the same digest whatever a running editor changes, and another one when what comes back changes', () => {
    const digest = declaredDigest(record());
    expect(declaredDigest(record({ at: '2026-11-30T00:00:00.000Z' }))).toBe(digest);
    expect(declaredDigest(record({ kept: { generation: 2, status: { phase: 'Running', port: 20001, observedGeneration: 2, runtimeRef: { kind: 'process', pid: 42 } as never, startTime: 'x' } } }))).toBe(digest);
    // Key order does not matter.
    expect(declaredDigest(record({ kept: { status: { observedGeneration: 2, port: 20001, phase: 'Stopped' }, generation: 2 } }))).toBe(digest);
    expect(declaredDigest(record({ manifestText: record().manifestText.replace('false', 'true') }))).not.toBe(digest);
    expect(declaredDigest(record({ kept: { generation: 2, status: { phase: 'Stopped', port: 20002, observedGeneration: 2 } } }))).not.toBe(digest);
    expect(declaredDigest(record({ uid: null }))).not.toBe(digest);
    expect(declaredDigest(record({ kept: { ...record().kept, settingsApplied: '{}' } }))).not.toBe(digest);
    expect(digest).toMatch(/^[0-9a-f]{32}$/);
  });

  it('reads back what was written', () => {
    expect(parseDeclared(encodeDeclared(record()), 'alpha')).toEqual({ record: record() });
  });

  it('refuses what is not a record of this server, saying why', () => {
    const bytes = (value: unknown) => Buffer.from(JSON.stringify(value));
    const good = JSON.parse(encodeDeclared(record()).toString());
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from('{not json'), /not JSON/],
      [bytes({ ...good, format: 'devbox-declared/9' }), /format/],
      [bytes({ ...good, name: 'beta' }), /names server "beta"/],
      [bytes({ ...good, uid: 7 }), /uid/],
      [bytes({ ...good, at: 'yesterday' }), /time/],
      [bytes({ ...good, manifestText: 'x'.repeat(4 * 1024 * 1024 + 1) }), /4 MiB/],
      [bytes({ ...good, kept: [] }), /record is not an object/],
      [bytes({ ...good, kept: { status: 'Running' } }), /status/],
      [bytes({ ...good, kept: { generation: 1.5 } }), /generation/],
      [bytes({ ...good, kept: { settingsApplied: {} } }), /settings/],
      [bytes(null), /format/],
    ];
    for (const [input, reason] of cases) {
      const parsed = parseDeclared(input, 'alpha');
      expect('problem' in parsed && parsed.problem, input.toString().slice(0, 80)).toMatch(reason);
    }
  });
});
