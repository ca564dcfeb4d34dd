import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeEditorOutput, SERVER, useHubs, waitFor, trackRunning } from './fixtures.ts';

describe('rotating log files', () => {
  const hubs = useHubs();

  it('rotates server.log by size and keeps at most maxFiles old files', async () => {
    const hub = hubs.open({ maxFileBytes: 4096, maxFiles: 2 });
    trackRunning(hub, SERVER);
    // 200 entries of about 120 bytes: some 24 KiB, six times the limit.
    for (let i = 0; i < 200; i++) hub.event(SERVER.name, 'INFO', `event ${String(i).padStart(3, '0')} ${'x'.repeat(60)}`);
    await hub.untrack(SERVER.name);

    const dir = hub.rawPaths(SERVER.name).dir;
    const files = fs.readdirSync(dir).filter((file) => file.startsWith('server.log')).sort();
    expect(files).toEqual(['server.log', 'server.log.1', 'server.log.2']);
    for (const file of files) expect(fs.statSync(path.join(dir, file)).size).toBeLessThanOrEqual(4096);
    // The newest entry is in server.log, and the files hold a contiguous, ordered run of the newest ones.
    const lines = ['server.log.2', 'server.log.1', 'server.log']
      .flatMap((file) => fs.readFileSync(path.join(dir, file), 'utf8').trimEnd().split('\n'))
      .map((line) => Number(/event (\d+)/.exec(line)?.[1]));
    expect(lines.at(-1)).toBe(199);
    expect(lines).toEqual(lines.map((_, i) => lines[0] + i));
  });

  it('empties editor.out in place once read past maxFileBytes while the editor keeps appending, losing no line', async () => {
    const hub = hubs.open({ maxFileBytes: 8192, maxFiles: 1, maxBufferBytes: 4 * 1024 * 1024 });
    trackRunning(hub, SERVER);
    const { stdout } = hub.rawPaths(SERVER.name);
    const editor = new FakeEditorOutput(stdout);
    try {
      let largestSeen = 0;
      for (let i = 0; i < 2000; i++) {
        editor.write(`line ${i} ${'y'.repeat(40)}\n`);
        // Output arrives over time: every 50 lines, wait until the hub has read what was written
        // (instead of sleeping a fixed time, which a loaded CI machine may not honour).
        if (i % 50 === 49) {
          largestSeen = Math.max(largestSeen, fs.statSync(stdout).size);
          await waitFor(() => hub.tail(SERVER.name, 2000).length === i + 1);
        }
      }
      await waitFor(() => hub.tail(SERVER.name, 2000).length === 2000);
      const messages = hub.tail(SERVER.name, 2000).map((entry) => entry.message);
      expect(messages).toEqual(Array.from({ length: 2000 }, (_, i) => `line ${i} ${'y'.repeat(40)}`));
      // ~100 KiB went through a file that never held much more than the limit.
      expect(largestSeen).toBeLessThan(8192 * 4);
      expect(fs.statSync(stdout).size).toBeLessThan(8192 * 4);
    } finally {
      editor.close();
    }
  });
});
