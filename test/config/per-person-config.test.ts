// capacity.perPerson in the config file: laid over the defaults key by key (a file that gives one
// limit keeps the others at 0, no limit), and a value that is not a whole number of 0 or more, or
// a key it does not know, refused at its line.
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, parseConfig } from '../../src/config/settings.ts';

function read(text: string) {
  const result = parseConfig('config.yaml', text);
  return result.problems ? { problems: result.problems.map((p) => `${p.line}:${p.column}: ${p.problem}`) } : { config: result.config };
}

describe('capacity.perPerson', () => {
  it('defaults to no limit per person', () => {
    expect(DEFAULT_CONFIG.capacity.perPerson).toEqual({ runningEditors: 0, servers: 0, memoryMb: 0 });
    expect(read('capacity:\n  maxRunning: 4\n').config?.capacity.perPerson).toEqual({ runningEditors: 0, servers: 0, memoryMb: 0 });
  });

  it('is laid over the defaults key by key, beside the fleet\'s limits', () => {
    const { config } = read('capacity:\n  maxRunning: 10\n  perPerson:\n    runningEditors: 2\n');
    expect(config?.capacity).toMatchObject({ maxRunning: 10, maxMemoryMb: 'auto', perPerson: { runningEditors: 2, servers: 0, memoryMb: 0 } });
  });

  it('refuses a negative or fractional limit and an unknown key, at their lines', () => {
    const { problems } = read('capacity:\n  perPerson:\n    runningEditors: -1\n    memoryMb: 1.5\n    editors: 3\n');
    expect(problems).toHaveLength(3);
    expect(problems!.find((p) => p.startsWith('3:'))).toMatch(/runningEditors.*>= 0|must be >= 0/);
    expect(problems!.find((p) => p.startsWith('4:'))).toMatch(/integer/);
    expect(problems!.find((p) => p.startsWith('5:'))).toMatch(/editors/);
  });
});
