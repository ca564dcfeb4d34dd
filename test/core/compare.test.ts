// The orderings used instead of localeCompare (which keeps ICU data resident) sort as it does.
import { describe, expect, it } from 'vitest';
import { byCodeUnits, byText, byVersion } from '../../src/core/compare.ts';
import { slugify } from '../../src/api/naming.ts';

describe('orderings without ICU', () => {
  it('sorts text case-insensitively, lower case first on a tie, as localeCompare with "en" does for ASCII', () => {
    const names = ['web', 'Data', 'databricks', 'Starters', 'data', 'b-2', 'b-10', 'Zeta', 'alpha'];
    expect([...names].sort(byText)).toEqual([...names].sort((a, b) => a.localeCompare(b, 'en')));
  });

  it('sorts by code unit like sort()', () => {
    const names = ['b.yaml', 'a.yml', 'a.yaml', 'B.yaml', 'a-1.yaml'];
    expect([...names].sort(byCodeUnits)).toEqual([...names].sort());
  });

  it('sorts versions numerically, as localeCompare with numeric: true does', () => {
    const versions = ['1.9.0', '1.10.0', '', '2.0.0-beta', '2.0.0', '1.9.12', '10.0.0'];
    expect([...versions].sort(byVersion)).toEqual([...versions].sort((a, b) => a.localeCompare(b, undefined, { numeric: true })));
  });
});

describe('slugify', () => {
  it('makes the names it made when it normalized every name, ASCII or not', () => {
    const before = (name: string) => name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50).replace(/-+$/, '') || 'server';
    for (const name of ['Data Pipeline!', 'Données café', 'ﬁle', '!!!', 'A\tB\u007f', 'x'.repeat(60)]) expect(slugify(name)).toBe(before(name));
    expect(slugify('Data Pipeline!')).toBe('data-pipeline');
    expect(slugify('ﬁle')).toBe('file');
  });
});
