// The shipped devbox.config.yaml: it is the built-in defaults, written out, so the two never drift.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configFileFrom, DEFAULT_CONFIG, loadConfig } from '../../src/config/settings.ts';
import { projectFile } from '../../src/core/project.ts';

const shipped = projectFile('devbox.config.yaml');
const PROJECT_ROOT = projectFile('.');

describe('devbox.config.yaml', () => {
  it('loads to exactly DEFAULT_CONFIG', () => {
    expect(loadConfig(shipped)).toStrictEqual(DEFAULT_CONFIG);
  });

  it('names its schema on its first line, for editors', () => {
    expect(readFileSync(shipped, 'utf8').split('\n')[0]).toBe('# yaml-language-server: $schema=./schemas/config.schema.json');
  });

  it('is the config file when DEVBOX_CONFIG is unset and it is in the working folder; DEVBOX_CONFIG wins', async () => {
    expect(configFileFrom({}, PROJECT_ROOT)).toBe(shipped);
    expect(configFileFrom({ DEVBOX_CONFIG: 'other.yaml' }, PROJECT_ROOT)).toBe(projectFile('other.yaml'));
    const empty = await mkdtemp(join(tmpdir(), 'devbox-no-config-'));
    try {
      expect(configFileFrom({}, empty)).toBeUndefined();
      await writeFile(join(empty, 'devbox.config.yaml'), 'ports: { min: 9000, max: 9001 }\n');
      expect(configFileFrom({}, empty)).toBe(join(empty, 'devbox.config.yaml'));
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
