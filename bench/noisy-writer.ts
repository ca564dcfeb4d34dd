// A noisy editor's output for the log-cost benchmark: appends one line per write() to a file,
// as an editor that prints one line per request does, at a given rate, until its time is up or
// it is sent SIGTERM; then prints {"written": N} on stdout.
//
//   node bench/noisy-writer.ts <file> <lines per second> <seconds>
//
// Each line is its own write(2) on one O_APPEND descriptor (what the runtime gives the editor),
// so every line is a separate change the service's file watch sees.

import fs from 'node:fs';

const [file, rateArg, secondsArg] = process.argv.slice(2);
const linesPerSec = Number(rateArg);
const seconds = Number(secondsArg);
if (!file || !(linesPerSec > 0) || !(seconds > 0)) {
  console.error('usage: node bench/noisy-writer.ts <file> <lines per second> <seconds>');
  process.exit(2);
}

const fd = fs.openSync(file, 'a');
const tag = `noisy-${process.pid}`;
let written = 0;
let stopped = false;
const start = performance.now();
const end = start + seconds * 1000;

function finish(): void {
  if (stopped) return;
  stopped = true;
  fs.closeSync(fd);
  process.stdout.write(`${JSON.stringify({ written, seconds: (performance.now() - start) / 1000 })}\n`);
}
process.on('SIGTERM', () => {
  finish();
  process.exit(0);
});

// A 1 ms tick: the lines due by now, each with its own write (about 20 at 20,000 lines/s).
function tick(): void {
  if (stopped) return;
  const now = performance.now();
  const due = Math.floor(((Math.min(now, end) - start) / 1000) * linesPerSec);
  for (; written < due; written++) {
    fs.writeSync(fd, `[${tag}] GET /static/out/vs/workbench/${written}.js 200 0.41ms seq=${written}\n`);
  }
  if (now >= end) finish();
  else setTimeout(tick, 1);
}
tick();
