// LiveConfig on its own: a real file in a temp folder, edited the ways people and editors do.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { LiveConfig } from '../../src/config/live-config.ts';
import { DEFAULT_CONFIG, loadConfig, type Config } from '../../src/config/settings.ts';
import { eventually } from '../helpers/wait.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A config file holding `text`, watched; what it logs and what listeners heard. */
async function watched(text: string) {
  const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-live-config-'));
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'devbox.config.yaml');
  await fs.writeFile(file, text);
  const lines: string[] = [];
  const heard: [Config, Config][] = [];
  const live = new LiveConfig({ file, initial: loadConfig(file), log: (line) => lines.push(line), settleMs: 20 });
  live.onChange((before, after) => heard.push([before, after]));
  cleanups.push(() => live.dispose());
  await live.watch();
  /** Writes the file the way many editors save: a new file renamed over the old one. */
  const save = async (next: string) => {
    await fs.writeFile(`${file}.tmp`, next);
    await fs.rename(`${file}.tmp`, file);
  };
  return { file, live, lines, heard, save };
}

const PORTS = 'ports: { min: 9000, max: 9010 }\n';

describe('LiveConfig', () => {
  it('swaps in a valid edit, tells listeners the old and new config, and logs one line of what changed', async () => {
    const { live, lines, heard, save } = await watched(PORTS);
    await save('ports: { min: 9000, max: 9020 }\nextensionGroups:\n  web: { extensions: [esbenp.prettier-vscode] }\n');
    await eventually(() => live.current.ports.max === 9020);
    expect(Object.keys(live.current.extensionGroups)).toEqual(['web']);
    expect(heard).toHaveLength(1);
    expect(heard[0][0].ports.max).toBe(9010);
    expect(heard[0][1].ports.max).toBe(9020);
    const said = lines.filter((line) => line.includes(' re-read: '));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('ports.max: 9010 -> 9020');
    expect(said[0]).toContain('extensionGroups: added web; removed python');
    expect(live.state().errors).toEqual([]);
  });

  it('keeps the last good config on a syntax error, with file, line and column, until an edit fixes it', async () => {
    const { file, live, lines, heard, save } = await watched(PORTS);
    const loadedAt = live.state().loadedAt;
    await save('ports:\n  min: 9000\n  max: [9010\n');
    const errors = await eventually(() => live.state().errors.length > 0 && live.state().errors);
    expect(errors[0]).toMatchObject({ file, line: expect.any(Number), column: expect.any(Number) });
    expect(lines).toContain(`${file}:${errors[0].line}:${errors[0].column}: ${errors[0].problem}`);
    expect(live.current.ports).toEqual({ min: 9000, max: 9010 });
    expect(live.state().loadedAt).toBe(loadedAt);
    expect(heard).toEqual([]);

    await save('ports: { min: 9000, max: 9011 }\n');
    await eventually(() => live.state().errors.length === 0);
    expect(live.current.ports.max).toBe(9011);
    expect(lines.at(-1)).toContain('(valid again)');
  });

  it('places each schema problem and each semantic one at its field', async () => {
    const { file, live, save } = await watched(PORTS);
    await save(['ports:', '  min: 9100', '  max: 9000', 'editor:', '  startTimeoutSeconds: 0', 'ui:', '  defaultExtensionGroups: [nope]', ''].join('\n'));
    const errors = await eventually(() => live.state().errors.length > 0 && live.state().errors);
    // The schema is checked first: the semantic checks wait until it passes.
    expect(errors).toEqual([{ file, line: 5, column: 24, problem: 'editor.startTimeoutSeconds: must be > 0' }]);
    await save(['ports:', '  min: 9100', '  max: 9000', 'ui:', '  defaultExtensionGroups: [nope]', ''].join('\n'));
    await eventually(() => live.state().errors[0]?.line === 2);
    expect(live.state().errors).toEqual([
      { file, line: 2, column: 8, problem: 'ports.min: 9100 must not exceed ports.max (9000): swap them, or widen the range' },
      { file, line: 5, column: 28, problem: expect.stringMatching(/^ui\.defaultExtensionGroups\.0: "nope" is not a group of extensionGroups \(python, .*\): name one of them, or add the group$/) },
    ]);
    expect(live.current.ports).toEqual({ min: 9000, max: 9010 });
  });

  it('reports a deleted file and applies it once it is written again (delete, then create)', async () => {
    const { file, live, save } = await watched(PORTS);
    await fs.rm(file);
    await eventually(() => live.state().errors[0]?.problem.startsWith('the file is gone'));
    expect(live.current.ports.max).toBe(9010);
    await fs.writeFile(file, 'ports: { min: 9000, max: 9030 }\n');
    await eventually(() => live.current.ports.max === 9030);
    expect(live.state().errors).toEqual([]);
    await save('ports: { min: 9000, max: 9031 }\n');
    await eventually(() => live.current.ports.max === 9031);
  });

  it('lists an edit of a value read only at start-up as pending a restart, until it is set back', async () => {
    const { live, lines, heard, save } = await watched(PORTS);
    await save(`${PORTS}controller: { workers: 3 }\n`);
    await eventually(() => live.state().pendingRestart.length > 0);
    expect(live.state().pendingRestart).toEqual(['controller.workers: 8 -> 3 takes effect after a restart']);
    expect(lines.at(-1)).toContain('controller.workers: 8 -> 3 takes effect after a restart');
    expect(lines.at(-1)).not.toContain('applied');
    expect(heard).toHaveLength(1);
    await save(`${PORTS}controller: { workers: 8 }\n`);
    await eventually(() => live.state().pendingRestart.length === 0);
  });

  it('leaves the built-in defaults alone when there is no file', async () => {
    const live = new LiveConfig({ initial: structuredClone(DEFAULT_CONFIG), log: () => undefined });
    await live.watch();
    await live.reload();
    expect(live.state()).toMatchObject({ file: undefined, errors: [], pendingRestart: [] });
    await live.dispose();
  });

  it('says a comment-only edit changed nothing, and tells no listener', async () => {
    const { live, lines, heard, save } = await watched(PORTS);
    await save(`# a comment\n${stringify({ ports: { min: 9000, max: 9010 } })}`);
    await eventually(() => lines.some((line) => line.endsWith('nothing changed')));
    expect(heard).toEqual([]);
    expect(live.current.ports.max).toBe(9010);
  });
});
