// What the real code-server's workbench sends and receives, case by case, measured in Chromium:
// an idle tab, opening a file, typing, a terminal running a command that prints. A tap between
// the browser and code-server sees the same bytes the service's proxy relays; it records every
// HTTP request line and every WebSocket frame (direction, opcode, size, compression) and, inside
// the frames, VS Code's own protocol messages (its 13-byte header: type u8, id u32, ack u32,
// length u32), and which chunks the proxy's own reader (src/proxy/editor-frames.ts) counts as use
// in the same bytes. docs/idle.md has the figures and what the proxy makes of them.
//
//   node scripts/probe-editor-traffic.ts [--idle-seconds 180] [--deflate] [--dump] [--json out.json]
//
// --deflate leaves the browser's permessage-deflate offer on the upgrade (the frames are then
// compressed and the probe inflates them to read the messages); without it the offer is removed,
// as the service's proxy does. --dump keeps the first bytes of each Regular message in the JSON
// (which call it is). It prints a summary per case; --json writes every record.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { constants, createInflateRaw, type InflateRaw } from 'node:zlib';
import type { Page } from 'playwright-core';
import { EditorFrameReader, socketProtocol } from '../src/proxy/editor-frames.ts';
import { resolveEditorBinary } from '../src/runtime/editor-binary.ts';
import { closeBrowser, launchBrowser } from '../test/helpers/browser.ts';

const { values: args } = parseArgs({
  options: {
    'idle-seconds': { type: 'string', default: '180' },
    deflate: { type: 'boolean', default: false },
    json: { type: 'string' },
    // Keeps the first bytes of each Regular message's body in the JSON (what the message is).
    dump: { type: 'boolean', default: false },
  },
});
const IDLE_SECONDS = Number(args['idle-seconds']);

const TYPES: Record<number, string> = {
  0: 'None', 1: 'Regular', 2: 'Control', 3: 'Ack', 5: 'Disconnect', 6: 'ReplayRequest', 7: 'Pause', 8: 'Resume', 9: 'KeepAlive',
};

interface FrameRecord { at: number; socket: number; fromClient: boolean; opcode: number; fin: boolean; rsv1: boolean; masked: boolean; wire: number; payload: number }
interface MessageRecord { at: number; socket: number; fromClient: boolean; type: string; length: number; body?: string }
interface RequestRecord { at: number; method: string; path: string }
/** A chunk the service's proxy would count as use (src/proxy/editor-frames.ts), read from the same bytes. */
interface CountedRecord { at: number; socket: number; fromClient: boolean }

const frames: FrameRecord[] = [];
const messages: MessageRecord[] = [];
const requests: RequestRecord[] = [];
const counted: CountedRecord[] = [];
const socketPaths = new Map<number, string>();
const socketKinds = new Map<number, string>();
let phase = 'load';
const phases: Array<{ name: string; from: number; to?: number }> = [{ name: phase, from: Date.now() }];

function startPhase(name: string): void {
  const now = Date.now();
  phases[phases.length - 1].to = now;
  phases.push({ name, from: now });
  phase = name;
  console.log(`${new Date(now).toISOString()} ${name}`);
}

/** VS Code's protocol messages in one direction of one socket: a byte stream across WebSocket messages. */
class ProtocolReader {
  #header = Buffer.alloc(13);
  #have = 0;
  #skip = 0;
  readonly socket: number;
  readonly fromClient: boolean;
  constructor(socket: number, fromClient: boolean) {
    this.socket = socket;
    this.fromClient = fromClient;
  }
  accept(data: Buffer): void {
    let at = 0;
    while (at < data.length) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, data.length - at);
        this.#skip -= n;
        at += n;
        continue;
      }
      const n = Math.min(13 - this.#have, data.length - at);
      data.copy(this.#header, this.#have, at, at + n);
      this.#have += n;
      at += n;
      if (this.#have < 13) continue;
      this.#have = 0;
      const length = this.#header.readUInt32BE(9);
      this.#skip = length;
      // The browser's first Control message says which connection this is (VS Code's ConnectionType: 1 management, 2 extension host).
      if (this.#header[0] === 2 && this.fromClient && !socketKinds.has(this.socket)) {
        const kind = /"desiredConnectionType":(\d)/.exec(data.subarray(at, at + length).toString('latin1'))?.[1];
        if (kind) socketKinds.set(this.socket, kind === '1' ? 'management' : kind === '2' ? 'extension host' : `type ${kind}`);
      }
      const record: MessageRecord = { at: Date.now(), socket: this.socket, fromClient: this.fromClient, type: TYPES[this.#header[0]] ?? `type ${this.#header[0]}`, length };
      if (args.dump && this.#header[0] === 1) {
        const body = data.subarray(at, at + Math.min(length, 160));
        record.body = `${[...body.subarray(0, 6)].join(',')} ${body.toString('latin1').replace(/[^\x20-\x7e]/g, '.')}`;
      }
      messages.push(record);
    }
  }
}

/** WebSocket frames in one direction: recorded, unmasked, inflated when compressed, passed to the protocol reader. */
class FrameReader {
  #buffer = Buffer.alloc(0);
  #inflate: InflateRaw | undefined;
  #chain = Promise.resolve();
  #message: Buffer[] = [];
  #compressed = false;
  readonly #protocol: ProtocolReader;
  readonly socket: number;
  readonly fromClient: boolean;
  constructor(socket: number, fromClient: boolean) {
    this.socket = socket;
    this.fromClient = fromClient;
    this.#protocol = new ProtocolReader(socket, fromClient);
  }
  accept(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      const b = this.#buffer;
      if (b.length < 2) return;
      let length = b[1] & 0x7f;
      let at = 2;
      if (length === 126) {
        if (b.length < 4) return;
        length = b.readUInt16BE(2);
        at = 4;
      } else if (length === 127) {
        if (b.length < 10) return;
        length = Number(b.readBigUInt64BE(2));
        at = 10;
      }
      const masked = (b[1] & 0x80) !== 0;
      const mask = masked ? b.subarray(at, at + 4) : undefined;
      if (masked) at += 4;
      if (b.length < at + length) return;
      const payload = Buffer.from(b.subarray(at, at + length));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      this.#buffer = b.subarray(at + length);
      const opcode = b[0] & 0x0f;
      const fin = (b[0] & 0x80) !== 0;
      const rsv1 = (b[0] & 0x40) !== 0;
      frames.push({ at: Date.now(), socket: this.socket, fromClient: this.fromClient, opcode, fin, rsv1, masked, wire: at + length, payload: length });
      if (opcode >= 8) continue;
      if (opcode !== 0) this.#compressed = rsv1;
      this.#message.push(payload);
      if (!fin) continue;
      const whole = Buffer.concat(this.#message);
      this.#message = [];
      if (!this.#compressed) {
        this.#chain = this.#chain.then(() => this.#protocol.accept(whole));
        continue;
      }
      this.#chain = this.#chain.then(() => this.#inflated(whole)).then((data) => this.#protocol.accept(data));
    }
  }
  #inflated(data: Buffer): Promise<Buffer> {
    this.#inflate ??= createInflateRaw({ windowBits: 15 });
    const inflate = this.#inflate;
    return new Promise((resolve, reject) => {
      const out: Buffer[] = [];
      const onData = (c: Buffer) => out.push(c);
      inflate.on('data', onData);
      inflate.once('error', reject);
      inflate.write(Buffer.concat([data, Buffer.from([0, 0, 0xff, 0xff])]));
      inflate.flush(constants.Z_SYNC_FLUSH, () => {
        inflate.off('data', onData);
        inflate.off('error', reject);
        resolve(Buffer.concat(out));
      });
    });
  }
}

let sockets = 0;
/** The tap: relays each connection to code-server; an upgrade's frames are read from then on, both ways. */
function tap(editorPort: number): Promise<{ port: number; close: () => void }> {
  const server = createServer((client: Socket) => {
    const editor = connect(editorPort, '127.0.0.1');
    let head = Buffer.alloc(0);
    let upgraded: number | undefined;
    let clientFrames: FrameReader | undefined;
    let editorFrames: FrameReader | undefined;
    let responseHead = Buffer.alloc(0);
    let proxyReaders: EditorFrameReader[] | undefined;
    const count = (chunk: Buffer, fromClient: boolean) => {
      if (proxyReaders?.[fromClient ? 0 : 1].accept(chunk)) counted.push({ at: Date.now(), socket: upgraded!, fromClient });
    };
    const destroy = () => { client.destroy(); editor.destroy(); };
    client.on('error', destroy);
    editor.on('error', destroy);
    client.on('close', destroy);
    editor.on('close', destroy);
    client.on('data', (chunk: Buffer) => {
      if (clientFrames) {
        count(chunk, true);
        clientFrames.accept(chunk);
        editor.write(chunk);
        return;
      }
      if (upgraded !== undefined) {
        editor.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      // HTTP requests are counted from the browser's side (page 'request' events); only an upgrade is read here.
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = head.subarray(0, end).toString('latin1');
      if (!/^upgrade:\s*websocket/im.test(text)) {
        editor.write(head);
        head = Buffer.alloc(0);
        upgraded = -1;
        return;
      }
      upgraded = ++sockets;
      socketPaths.set(upgraded, text.split(' ')[1]);
      let lines = text.split('\r\n');
      if (!args.deflate) lines = lines.filter((line) => !/^sec-websocket-extensions:/i.test(line));
      editor.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head.subarray(end + 4)]));
      clientFrames = new FrameReader(upgraded, true);
      const protocol = socketProtocol(text.split(' ')[1]);
      proxyReaders = [new EditorFrameReader(protocol, true), new EditorFrameReader(protocol, false)];
      if (proxyReaders[0].accept(head.subarray(end + 4))) counted.push({ at: Date.now(), socket: upgraded, fromClient: true });
    });
    editor.on('data', (chunk: Buffer) => {
      client.write(chunk);
      if (!clientFrames) return;
      if (editorFrames) {
        count(chunk, false);
        return editorFrames.accept(chunk);
      }
      responseHead = Buffer.concat([responseHead, chunk]);
      const end = responseHead.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = responseHead.subarray(0, end).toString('latin1');
      const extension = /^sec-websocket-extensions:\s*(.*)$/im.exec(text)?.[1];
      console.log(`socket ${upgraded} ${socketPaths.get(upgraded!)?.split('?')[0]}: ${text.split('\r\n')[0]}, extensions: ${extension ?? 'none'}`);
      editorFrames = new FrameReader(upgraded!, false);
      count(responseHead.subarray(end + 4), false);
      editorFrames.accept(responseHead.subarray(end + 4));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    resolve({ port: (server.address() as { port: number }).port, close: () => server.close() });
  }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

async function heartbeat(port: number): Promise<string> {
  const body = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.json()) as { status: string; lastHeartbeat: number };
  return `${body.status}, lastHeartbeat ${Math.round((Date.now() - body.lastHeartbeat) / 1000)} s ago`;
}

async function runCommand(page: Page, command: string): Promise<void> {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget', { state: 'visible' });
  await page.keyboard.type(command, { delay: 20 });
  await sleep(500);
  await page.keyboard.press('Enter');
}

const root = mkdtempSync(join(tmpdir(), 'probe-editor-'));
const workspace = join(root, 'workspace');
mkdirSync(workspace);
writeFileSync(join(workspace, 'notes.txt'), 'first line\n');
const editorPort = await freePort();
writeFileSync(join(root, 'config.yaml'), '');
const editor = spawn(resolveEditorBinary().path, [
  '--bind-addr', `127.0.0.1:${editorPort}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
  '--disable-workspace-trust', '--config', join(root, 'config.yaml'), '--user-data-dir', join(root, 'user-data'),
  '--extensions-dir', join(root, 'extensions'), workspace,
], { stdio: 'ignore', detached: true });
const { port: tapPort, close: closeTap } = await tap(editorPort);
const browser = await launchBrowser();
try {
  for (let i = 0; i < 200; i++) {
    if (await fetch(`http://127.0.0.1:${editorPort}/healthz`).then((r) => r.ok, () => false)) break;
    await sleep(250);
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.port === String(tapPort)) requests.push({ at: Date.now(), method: request.method(), path: url.pathname + url.search });
  });
  await page.goto(`http://127.0.0.1:${tapPort}/?folder=${encodeURIComponent(workspace)}`);
  await page.waitForSelector('.part.sidebar .explorer-folders-view', { timeout: 120_000 });
  await sleep(10_000);
  console.log(`healthz after load: ${await heartbeat(editorPort)}`);

  // The first minute after a load still carries the workbench's start-up (extensions activating); the rest is the steady state.
  startPhase('idle, first minute');
  await sleep(Math.min(60, IDLE_SECONDS) * 1000);
  startPhase('idle, after the first minute');
  await sleep(Math.max(0, IDLE_SECONDS - 60) * 1000);
  console.log(`healthz after ${IDLE_SECONDS} s idle: ${await heartbeat(editorPort)}`);

  startPhase('open file');
  await page.keyboard.press('Control+P');
  await page.waitForSelector('.quick-input-widget', { state: 'visible' });
  await page.keyboard.type('notes.txt', { delay: 50 });
  await sleep(1000);
  await page.keyboard.press('Enter');
  await page.waitForSelector('.monaco-editor .view-lines', { state: 'visible' });
  await sleep(5000);

  startPhase('typing');
  await page.click('.monaco-editor .view-lines');
  const typedUntil = Date.now() + 30_000;
  while (Date.now() < typedUntil) {
    await page.keyboard.type('word ', { delay: 150 });
    await sleep(1000);
  }
  await sleep(3000);

  startPhase('terminal starts');
  await runCommand(page, 'Terminal: Create New Terminal');
  await page.waitForSelector('.terminal-wrapper', { state: 'visible', timeout: 60_000 });
  await sleep(5000);
  await page.keyboard.type('while true; do date; sleep 1; done', { delay: 30 });
  await page.keyboard.press('Enter');
  await sleep(2000);

  startPhase('terminal prints');
  await sleep(30_000);

  startPhase('idle with terminal quiet');
  await page.keyboard.press('Control+C');
  await sleep(Math.min(IDLE_SECONDS, 60) * 1000);
  phases[phases.length - 1].to = Date.now();
  await context.close();
} finally {
  await closeBrowser(browser);
  closeTap();
  try { process.kill(-editor.pid!, 'SIGTERM'); } catch { /* gone */ }
  rmSync(root, { recursive: true, force: true });
}

// --- The tables: per phase, per socket and direction ---
const OPCODES: Record<number, string> = { 0: 'cont', 1: 'text', 2: 'binary', 8: 'close', 9: 'ping', 10: 'pong' };
const summary: Record<string, unknown> = {};
for (const { name, from, to } of phases) {
  const within = <T extends { at: number }>(list: T[]) => list.filter((r) => r.at >= from && r.at < (to ?? Infinity));
  const seconds = ((to ?? Date.now()) - from) / 1000;
  const perSocket: Record<string, unknown> = {};
  for (const socket of new Set(within(frames).map((f) => f.socket))) {
    for (const fromClient of [true, false]) {
      const fs = within(frames).filter((f) => f.socket === socket && f.fromClient === fromClient);
      if (fs.length === 0) continue;
      const ms = within(messages).filter((m) => m.socket === socket && m.fromClient === fromClient);
      const byType: Record<string, { count: number; lengths: string }> = {};
      for (const m of ms) {
        const entry = byType[m.type] ??= { count: 0, lengths: '' };
        entry.count++;
      }
      for (const type of Object.keys(byType)) {
        const lengths = ms.filter((m) => m.type === type).map((m) => m.length).sort((a, b) => a - b);
        byType[type].lengths = `${lengths[0]}–${lengths[lengths.length - 1]} (median ${lengths[lengths.length >> 1]})`;
      }
      const opcodes: Record<string, number> = {};
      for (const f of fs) opcodes[OPCODES[f.opcode] ?? f.opcode] = (opcodes[OPCODES[f.opcode] ?? f.opcode] ?? 0) + 1;
      const wires = fs.map((f) => f.wire).sort((a, b) => a - b);
      const kind = socketKinds.get(socket) ?? 'unknown';
      perSocket[`socket ${socket} (${kind}) ${fromClient ? 'browser→editor' : 'editor→browser'}`] = {
        counted_by_proxy: within(counted).filter((c) => c.socket === socket && c.fromClient === fromClient).length,
        frames: fs.length, bytes: wires.reduce((a, b) => a + b, 0), frame_bytes: `${wires[0]}–${wires[wires.length - 1]} (median ${wires[wires.length >> 1]})`,
        compressed: fs.filter((f) => f.rsv1).length, masked: fs.filter((f) => f.masked).length, opcodes, messages: byType,
      };
    }
  }
  const reqs = within(requests);
  summary[name] = {
    seconds: Math.round(seconds),
    http_requests: reqs.length,
    http_paths: [...new Set(reqs.map((r) => `${r.method} ${r.path.split('?')[0]}`))].slice(0, 30),
    sockets: perSocket,
  };
}
console.log(JSON.stringify({ deflate_offered: args.deflate, sockets: Object.fromEntries(socketKinds), summary }, null, 2));
if (args.json) writeFileSync(args.json, JSON.stringify({ deflate_offered: args.deflate, socketPaths: Object.fromEntries(socketPaths), phases, frames, messages, requests, counted }, null, 1));
process.exit(0);
