#!/usr/bin/env node
// Runs before `npm test`: the browser test drives Debian's Chromium (the npm registry's
// browser downloads cannot reach their hosts here). Installs it with apt-get when missing.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  if (process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
    console.log('[ensure-chromium] installing Debian\'s chromium for the browser test');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const run = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0;
    if (!(run(['update', '-qq']) && run(['install', '-y', '-qq', '--no-install-recommends', 'chromium', 'fonts-liberation']))) {
      console.error('[ensure-chromium] apt-get could not install chromium; the browser test will say so');
    }
  } else {
    console.error(`[ensure-chromium] no Chromium at ${chromium}: install it (apt-get install chromium) or set CHROMIUM_PATH`);
  }
}
