// A VS Code WebSocket through the service's proxy at full speed: what reading its frames for
// activity (src/proxy/editor-frames.ts) costs. One socket on a VS Code path to the stub editor,
// which echoes; the client sends Regular messages of a few KB, masked as a browser's are, with
// up to WINDOW of them in flight, and times them coming back: both of the proxy's readers (the
// browser's masked frames, the editor's plain ones) see every byte. Beside it, the echo round
// trip of one small message, through the proxy and direct.
import { WebSocket } from 'ws';
import { EditorFrameReader } from '../src/proxy/editor-frames.ts';
import { opened } from '../test/helpers/net.ts';
import { extensionHostCall, protocolMessage } from '../test/helpers/vscode-messages.ts';
import { benchPorts, median, round, startBenchService } from './harness.ts';

const VSCODE_PATH = '/stable-0123abc?reconnectionToken=bench&reconnection=false&skipWebSocketFrames=false';
/** Messages in flight at once. */
const WINDOW = 64;

/** MB/s of `total` messages echoed through `url`, WINDOW in flight. */
async function streamMbPerSec(url: string, message: Buffer, total: number): Promise<number> {
  const socket = await opened(new WebSocket(url, { perMessageDeflate: false }));
  try {
    let sent = 0;
    let received = 0;
    const start = performance.now();
    await new Promise<void>((resolve) => {
      const send = () => {
        while (sent < total && sent - received < WINDOW) {
          socket.send(message);
          sent++;
        }
      };
      socket.on('message', () => {
        if (++received === total) resolve();
        else send();
      });
      send();
    });
    return (2 * total * message.length) / 1e6 / ((performance.now() - start) / 1000);
  } finally {
    socket.close();
  }
}

/** Through the proxy and direct, alternating over `rounds`: the medians, and their ratio. */
export async function benchEditorStream(stubBin: string, portOffset: number, rounds = 5, checkout?: string) {
  const service = await startBenchService(stubBin, benchPorts(portOffset), { checkout });
  try {
    const { id, port } = await service.call('POST', '/servers', { name: 'editor stream' });
    await service.call('POST', `/servers/${id}/start`);
    const urls = { proxy: `${service.url.replace('http', 'ws')}/vscode/${port}${VSCODE_PATH}`, direct: `ws://127.0.0.1:${port}${VSCODE_PATH}` };
    // A person's edit as the workbench sends it, about 4 KB.
    const message = protocolMessage(1, extensionHostCall('$acceptModelChanged', JSON.stringify({ text: 'x'.repeat(4000) })));
    const mbs = { proxy: [] as number[], direct: [] as number[] };
    await streamMbPerSec(urls.proxy, message, 2000);
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 === 0 ? (['proxy', 'direct'] as const) : (['direct', 'proxy'] as const)) {
        mbs[side].push(await streamMbPerSec(urls[side], message, 20_000));
      }
    }
    return {
      message_bytes: message.length,
      proxy_mb_per_sec: round(median(mbs.proxy), 1),
      direct_mb_per_sec: round(median(mbs.direct), 1),
      ratio: round(median(mbs.proxy) / median(mbs.direct), 3),
      runs: { proxy: mbs.proxy.map((v) => round(v, 1)), direct: mbs.direct.map((v) => round(v, 1)) },
    };
  } finally {
    await service.close();
  }
}

/**
 * The reader alone, in this process: MB/s it reads of a browser's masked stream of ~4 KB edits
 * and of an editor's stream of small output events, in 64 KB chunks (what a socket delivers).
 */
export function benchFrameReader(megabytes = 256) {
  const frame = (payload: Buffer, mask: boolean): Buffer => {
    const head = Buffer.from([0x82, (mask ? 0x80 : 0) | 126, payload.length >> 8, payload.length & 0xff]);
    if (!mask) return Buffer.concat([head, payload]);
    const key = Buffer.from([1, 2, 3, 4]);
    return Buffer.concat([head, key, Buffer.from(payload.map((b, i) => b ^ key[i & 3]))]);
  };
  const edits = frame(protocolMessage(1, extensionHostCall('$acceptModelChanged', JSON.stringify({ text: 'x'.repeat(4000) }))), true);
  const events = frame(Buffer.concat(Array.from({ length: 40 }, () => protocolMessage(1, Buffer.concat([
    Buffer.from([4, 2, 6, 204, 1, 6, 3, 5, 50]), Buffer.from('{"id":1,"event":"Sun Nov 29 20:59:29 UTC 2026\\r\\n"}'),
  ])))), false);
  const result: Record<string, number> = {};
  for (const [name, unit, fromClient] of [['browser_edits', edits, true], ['editor_output', events, false]] as const) {
    const stream = Buffer.concat(Array.from({ length: Math.ceil(4 * 65536 / unit.length) * 4 }, () => unit));
    const chunks = Array.from({ length: Math.floor(stream.length / 65536) }, (_, i) => stream.subarray(i * 65536, (i + 1) * 65536));
    const reader = new EditorFrameReader('vscode-framed', fromClient);
    let bytes = 0;
    const start = performance.now();
    while (bytes < megabytes * 1e6) {
      for (const chunk of chunks) reader.accept(chunk);
      bytes += chunks.length * 65536;
    }
    result[`${name}_mb_per_sec`] = round(bytes / 1e6 / ((performance.now() - start) / 1000), 0);
  }
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(benchFrameReader());
