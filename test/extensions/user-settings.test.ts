// The settings merge and the tolerant settings.json reader, as plain functions.
import { expect, it } from 'vitest';
import { desiredSettings, mergeSettings, parseJsonc } from '../../src/extensions/user-settings.ts';

it('reads settings.json with comments and trailing commas, leaving strings that look like them alone', () => {
  const text = '{\n  // a comment\n  "a": "http://x/*y*/", /* block */\n  "b": [1, 2,],\n  "c": "d,}",\n}\n';
  expect(parseJsonc(text)).toEqual({ a: 'http://x/*y*/', b: [1, 2], c: 'd,}' });
  expect(parseJsonc('  ')).toEqual({});
  expect(parseJsonc('{"a": ')).toBeUndefined();
  expect(parseJsonc('[1]')).toBeUndefined();
});

it('lays spec.settings over the groups\' user_settings, in the order the spec names the groups', () => {
  const groups = {
    a: { name: 'a', description: '', extensions: [], user_settings: { x: 1, y: 1 } },
    b: { name: 'b', description: '', extensions: [], user_settings: { y: 2 } },
  };
  expect(desiredSettings(groups, ['a', 'b', 'gone'], { z: 3 })).toEqual({ x: 1, y: 2, z: 3 });
  expect(desiredSettings(groups, ['b', 'a'], { y: 9 })).toEqual({ x: 1, y: 9 });
});

it('changes only the keys whose desired value changed, and removes only what it wrote and the user left', () => {
  const lastWritten = { size: 14, theme: 'dark', gone: true, alsoGone: 1 };
  const current = { size: 20, theme: 'dark', gone: true, alsoGone: 2, mine: 'x' };
  const desired = { size: 14, theme: 'light', added: 'new' };
  expect(mergeSettings(current, desired, lastWritten)).toEqual({ size: 20, theme: 'light', alsoGone: 2, mine: 'x', added: 'new' });
});
