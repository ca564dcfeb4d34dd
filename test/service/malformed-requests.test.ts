// Fuzz: thousands of malformed requests from a seeded generator, over raw sockets, to every route
// family (API, log streams, editor proxy), as plain requests and as WebSocket upgrades. None may
// stop the service, get a 500 or reach the last-resort guard, or disturb a running editor; every
// error the service itself answers is in the error envelope.
// A failure names its seed and request: FUZZ_SEED=<seed> repeats the same run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../helpers/raw-http.ts';
import { processExists, startBystander, startTestService, type TestService } from '../helpers/service.ts';
import { prng } from '../helpers/prng.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const COUNT = 3000;
const PARALLEL = 16;

let service: TestService;
let editor: { id: string; port: number; pid: number };

beforeAll(async () => {
  service = await startTestService();
  editor = await startBystander(service);
});
afterAll(async () => {
  await service?.stop();
});

/**
 * Builds one request from the generator: a few are garbage or break HTTP's syntax, most are
 * well-formed HTTP with odd contents, so that they get past the parser to every handler. The
 * real editor's id is never used (a well-formed stop would be no fuzz), its port is.
 */
function generator(random: () => number, servicePort: number, editorPort: number) {
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  const chance = (p: number) => random() < p;
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256))).toString('latin1');
  const visible = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + int(94))).join('');
  const escaped = (n: number) => Array.from({ length: n }, () => `%${int(256).toString(16).padStart(2, '0')}`).join('');

  // Path segments that are legal on the wire: escapes of any byte, broken escapes, dots, long ones.
  const segment = () => pick([
    () => crypto.randomUUID(), () => '00000000-0000-4000-8000-000000000000', () => '%', () => '%E0%A4%A', () => '%zz', () => '..',
    () => '%2e%2e', () => '%00', () => '%2F', () => 'a'.repeat(1 + int(9000)), () => escaped(1 + int(8)), () => '', () => '~',
    () => visible(1 + int(12)).replace(/[?#/]/g, '_'), () => String(int(70000)), () => '-1', () => '1e3', () => '%C3%A9', () => '%ED%A0%80',
  ])();
  const query = () => pick(['', '', '?', `?tail=${segment()}`, `?lines=${segment()}`, `?tail=${int(5000)}&tail=x`, `?${segment()}=${segment()}`, '?%', `?${visible(8)}`]);
  const port = () => pick([String(editorPort), String(editorPort), String(servicePort), '0', '99999', '65536', '00000' + editorPort, segment()]);
  const path = () => pick([
    () => '/servers', () => `/servers/${segment()}`, () => `/servers/${segment()}/${pick(['start', 'stop', 'restart', 'health', 'logs', 'refresh-status', segment()])}`,
    () => '/servers/refresh-all', () => '/manifests', () => '/health', () => '/ws/logs', () => `/ws/logs/${segment()}`, () => `/ws/logs/${segment()}/${segment()}`,
    () => `/vscode/${port()}/${segment()}`, () => `/editor/${port()}/${segment()}/${segment()}`, () => `/vscode/${port()}`, () => `/editor/${port()}`,
    () => '//', () => '///', () => '*', () => '/', () => `http://${segment()}/servers`, () => `//${segment()}/ws/logs`, () => segment(),
    () => `/vscode/${editorPort}/../../servers`, () => `/vscode/${editorPort}/%2e%2e/%2e%2e/health`, () => `/ws/logs/..%2f..%2f`,
  ])() + query();
  const method = () => pick(['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE', 'PROPFIND', 'M-SEARCH', 'SOURCE']);
  const version = () => pick(['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0']);
  const host = () => (chance(0.8)
    ? pick([`127.0.0.1:${servicePort}`, `localhost:${servicePort}`, '[::1]', 'localhost'])
    : pick(['attacker.example', '', 'a:b:c', visible(8), 'x'.repeat(300)]));
  const upgrade = () => [
    `Upgrade: ${pick(['websocket', 'websocket', 'WebSocket', 'h2c', ''])}`,
    `Connection: ${pick(['Upgrade', 'Upgrade', 'upgrade, keep-alive', 'close'])}`,
    ...(chance(0.9) ? [`Sec-WebSocket-Key: ${pick(['dGhlIHNhbXBsZSBub25jZQ==', 'dGhlIHNhbXBsZSBub25jZQ==', '', 'short', visible(24)])}`] : []),
    ...(chance(0.9) ? [`Sec-WebSocket-Version: ${pick(['13', '13', '8', '', 'x'])}`] : []),
    ...(chance(0.3) ? [`Origin: ${pick(['http://attacker.example', 'null', `http://localhost:${servicePort}`, visible(6)])}`] : []),
    ...(chance(0.2) ? [`Sec-WebSocket-Extensions: ${pick(['permessage-deflate; client_max_window_bits', 'x; y=', visible(10)])}`] : []),
    ...(chance(0.2) ? [`Sec-WebSocket-Protocol: ${pick(['a, a', ',', visible(10)])}`] : []),
  ];
  const header = () => pick([
    'Content-Type: application/json', 'Content-Type: application/json', 'Content-Type: text/plain', 'Content-Type: application/json; charset=utf-16',
    `Content-Type: ${visible(6)}`, 'Content-Encoding: gzip', 'Content-Encoding: br, identity', `Content-Length: ${int(50)}`,
    'Expect: 100-continue', 'Expect: nonsense', 'Cookie: devbox-session=x; a=b', 'Authorization: Bearer x', 'X-Forwarded-Host: elsewhere.example',
    `X-Forwarded-For: ${visible(10)}`, `X-Forwarded-Proto: ${visible(5)}`, `X-Long: ${'y'.repeat(int(20000))}`, `Accept: ${visible(10)}`,
    'Accept-Encoding: gzip;q=x', `Range: bytes=${int(100)}-${int(10)}`, 'If-None-Match: *', `Connection: ${pick(['close', 'keep-alive', visible(5)])}`,
  ]);
  // Breaks HTTP's own syntax: the parser refuses these before any handler runs.
  const broken = () => pick([
    'no colon here', ' folded continuation', `${bytes(5)}: ${bytes(5)}`, 'Content-Length: -1', 'Content-Length: 10, 20',
    'Content-Length: 99999999999999999999', 'Transfer-Encoding: gzip, chunked', `Transfer-Encoding: ${visible(6)}`,
  ]);
  const body = () => pick([
    '', '', '{}', '{"name":', '{"name": 1}', '[]', 'null', '"x"', '{"name":"x","settings":' + '{"a":'.repeat(40) + '1' + '}'.repeat(41) + '}',
    '['.repeat(int(5000)), bytes(int(200)), '{"name":"' + '\\u0000'.repeat(50) + '"}', '{"__proto__":{"polluted":1}}', '{"tail": -1}',
  ]);

  return (): string => {
    if (chance(0.04)) return bytes(1 + int(300)); // plain garbage
    const headers: string[] = [];
    if (chance(0.9)) headers.push(`Host: ${host()}`);
    if (chance(0.4)) headers.push(...upgrade());
    for (let n = int(4); n > 0; n--) headers.push(header());
    if (chance(0.08)) headers.push(broken());
    const content = body();
    const chunked = content !== '' && chance(0.2);
    if (chunked) headers.push('Transfer-Encoding: chunked');
    else if (content !== '' && chance(0.9)) headers.push(`Content-Length: ${Buffer.byteLength(content, 'latin1') + pick([0, 0, 0, -1, 3])}`);
    const payload = chunked ? `${content.length.toString(16)}\r\n${content}\r\n0\r\n\r\n` : content;
    const line = chance(0.06)
      ? pick([`${method()} ${path()}`, `${method()} /${bytes(4)} ${version()}`, `${bytes(3)} / ${version()}`, `GET / ${pick(['HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', 'HTTPS/1.1', bytes(4)])}`])
      : `${method()} ${path()} ${version()}`;
    return `${line}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n${payload}`;
  };
}

describe('malformed requests', () => {
  it(`never stop the service, get errors in the envelope, never a 500, and never disturb a running editor (seed ${SEED}, ${COUNT} requests)`, async () => {
    const next = generator(prng(SEED), service.port, editor.port);
    const requests = Array.from({ length: COUNT }, next);
    const statuses = new Map<number | 'none', number>();
    const failures: string[] = [];
    let index = 0;
    const start = performance.now();
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      while (index < requests.length) {
        const i = index++;
        // Most clients stop sending after the request, some keep the connection open.
        const answer = await rawRequest(service.port, Buffer.from(requests[i], 'latin1'), 1000, i % 5 !== 0);
        statuses.set(answer.status ?? 'none', (statuses.get(answer.status ?? 'none') ?? 0) + 1);
        const [method, target] = requests[i].split(' ', 2);
        // Pages and handshakes of the editor are its own answers; a HEAD answer has no body.
        const fromEditor = new RegExp(`^/(vscode|editor)/0*${editor.port}([/?]|$)`).test(target ?? '');
        if (answer.status !== undefined && answer.status >= 400 && method !== 'HEAD' && !fromEditor && answer.body?.status !== 'error') {
          failures.push(`seed ${SEED} request #${i} got ${answer.status} without the error envelope: ${JSON.stringify(requests[i].slice(0, 300))} -> ${JSON.stringify(answer.text.slice(0, 300))}`);
        }
        // A 502 is the editor's doing (it may close before a body it did not read is sent), not the service's.
        const editorClosed = answer.status === 502 && answer.body?.error?.code === 'EDITOR_UNAVAILABLE';
        if (answer.status !== undefined && answer.status >= 500 && !editorClosed) {
          failures.push(`seed ${SEED} request #${i} got ${answer.status}: ${JSON.stringify(requests[i].slice(0, 300))} -> ${JSON.stringify(answer.text.slice(0, 300))}`);
        }
      }
    }));
    const seconds = (performance.now() - start) / 1000;
    console.log(`${COUNT} malformed requests in ${seconds.toFixed(1)} s; answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failures).toEqual([]);
    // Nothing reached the last-resort guards or express's 500 handler.
    expect(service.lines.filter((line) => / failed: /.test(line))).toEqual([]);

    expect((await service.request('GET', '/health')).status).toBe(200);
    const record = (await service.request('GET', `/servers/${editor.id}`)).body;
    expect(record).toMatchObject({ status: 'running', pid: editor.pid, port: editor.port });
    expect(processExists(editor.pid)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${editor.port}/healthz`)).status).toBe(200);
    const page = await fetch(`${service.url}/vscode/${editor.port}/`);
    expect(await page.text()).toContain('stub editor');
  });
});
