// The floor under the service's CPU at rest: bare Node.js doing only the duty any supervisor of
// the same running editors has, with a heap of the same size, in a process of its own. Run by
// `npm run bench -- scale` beside the service's own window, on the same editors:
//   every 2 s   read each editor's /proc/<pid>/stat (its CPU and memory, as the usage sample does);
//   every 6 s   stat each editor's two output files (the log poll's safety look);
//   every 30 s  GET /healthz of each editor, 16 at a time (the heartbeat read, which is also its health probe).
// On a virtual machine whose host takes back memory left untouched, the same duty costs more
// with a bigger heap around it: the floor holds `heapMb` of live objects so the comparison is fair.
//
// usage: node bench/rest-floor.ts <heapMb> <windowSeconds> <json [{pid, port, out, err}]>
// prints {"cpu_percent_of_core": n, "heap_mb": n, "wake_ups_per_second": n}
import { openSync, readSync, closeSync, statSync, readFileSync } from 'node:fs';
import { request } from 'node:http';

interface Editor { pid: number; port: number; out: string; err: string }

const [heapArg, windowArg, editorsArg] = process.argv.slice(2);
const heapMb = Number(heapArg);
const windowS = Number(windowArg);
const editors = JSON.parse(editorsArg) as Editor[];

// Live objects of about the service's size: records of a few hundred bytes each, as its servers are.
const kept: Array<{ name: string; text: string; fields: number[] }> = [];
for (let i = 0; i < heapMb * 2048; i++) kept.push({ name: `seat-${i}`, text: 'x'.repeat(400) + i, fields: [i, i + 1, i + 2] });

const buffer = Buffer.alloc(4096);
function readStat(pid: number): number {
  try {
    const fd = openSync(`/proc/${pid}/stat`, 'r');
    try {
      return readSync(fd, buffer, 0, buffer.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return 0;
  }
}

function healthz(port: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', resolve);
      res.on('error', () => resolve());
    });
    req.on('error', () => resolve());
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

let ticks = 0;
const timer = setInterval(() => {
  ticks++;
  for (const { pid } of editors) readStat(pid);
  if (ticks % 3 === 0) for (const { out, err } of editors) for (const file of [out, err]) statSync(file, { throwIfNoEntry: false });
  if (ticks % 15 === 0) {
    void (async () => {
      for (let at = 0; at < editors.length; at += 16) await Promise.all(editors.slice(at, at + 16).map((e) => healthz(e.port)));
    })();
  }
}, 2000);

const switches = () => Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/self/status`, 'utf8'))?.[1] ?? 0);
// Settled first, as the service is: the heap built, a few rounds of the duty done.
await new Promise((resolve) => setTimeout(resolve, 5000));
const before = process.cpuUsage();
const wokeBefore = switches();
await new Promise((resolve) => setTimeout(resolve, windowS * 1000));
const used = process.cpuUsage(before);
const cpu = ((used.user + used.system) / 1000 / (windowS * 1000)) * 100;
console.log(JSON.stringify({
  cpu_percent_of_core: Math.round(cpu * 100) / 100,
  heap_mb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
  wake_ups_per_second: Math.round(((switches() - wokeBefore) / windowS) * 10) / 10,
  kept: kept.length,
}));
clearInterval(timer);
